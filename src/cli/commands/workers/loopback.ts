/**
 * Whether an owner's address is one only its own machine reaches: `svc workers invite` notes it
 * about the token it prints, `svc workers join` gives it as the likely cause when nothing answers.
 */

/** Whether `url` names this machine's loopback interface: no other machine reaches it. */
export const onlyThisMachine = (url: string): boolean => {
  const host = new URL(url).hostname
  return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host)
}
