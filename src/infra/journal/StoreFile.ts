/** Where the owner's SQLite store lives: `$SVC_HOME/svc.sqlite`. */
import * as nodePath from "node:path"

export const STORE_FILE = "svc.sqlite"
export const storePath = (home: string) => nodePath.join(home, STORE_FILE)
