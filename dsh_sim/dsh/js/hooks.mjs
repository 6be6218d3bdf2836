// ESM loader hook: the DSH JSONL backend (and only it) gets the SimFS shims for node:fs,
// node:fs/promises and node:crypto. Everything else, including the shims themselves and this
// bridge, keeps the real modules.
import { registerHooks } from "node:module";

const SHIMS = {
	"node:fs": new URL("./sim-fs.mjs", import.meta.url).href,
	"fs": new URL("./sim-fs.mjs", import.meta.url).href,
	"node:fs/promises": new URL("./sim-fs-promises.mjs", import.meta.url).href,
	"fs/promises": new URL("./sim-fs-promises.mjs", import.meta.url).href,
	"node:crypto": new URL("./sim-crypto.mjs", import.meta.url).href,
	"crypto": new URL("./sim-crypto.mjs", import.meta.url).href,
};

export function install() {
	registerHooks({
		resolve(specifier, context, nextResolve) {
			const parent = context.parentURL ?? "";
			if (parent.includes("/@deepseek-ai/dsh-session-persistence-jsonl/") && Object.hasOwn(SHIMS, specifier)) {
				return { url: SHIMS[specifier], shortCircuit: true };
			}
			return nextResolve(specifier, context);
		},
	});
}
