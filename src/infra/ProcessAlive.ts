/** Whether a process (or, given a negative id, a process group) still lives: signal 0 reaches it, or it is another user's (EPERM). */
export const processAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}
