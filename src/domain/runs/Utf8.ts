/** UTF-8 on the bytes a job wrote, not on their decoded text. */

/**
 * How many of `bytes` to take so that they do not end inside a UTF-8 character: a read cut in
 * the middle of one leaves its start for the next read. Counted on the bytes themselves, not on
 * their decoded text: a job's output is whatever it wrote, and invalid bytes (each read as one
 * U+FFFD of three bytes) must not move the next read's offset.
 */
export const completeUtf8Length = (bytes: Uint8Array): number => {
  const n = bytes.length
  let lead = n - 1
  while (lead >= 0 && lead > n - 4 && (bytes[lead]! & 0xc0) === 0x80) lead--
  if (lead < 0) return n
  const b = bytes[lead]!
  const length = b >= 0xf0 && b <= 0xf7 ? 4 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xc0 && b < 0xe0 ? 2 : 1
  return n - lead < length ? lead : n
}
