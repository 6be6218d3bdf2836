// node:fs as the DSH backend sees it under the simulator: only what it imports.
import { fsCall, makeDirent } from "./sim-fs-common.mjs";

export function readdirSync(path, options) {
	const entries = fsCall("readdir", { path });
	return options?.withFileTypes ? entries.map((e) => makeDirent(path, e)) : entries.map((e) => e.name);
}
export default { readdirSync };
