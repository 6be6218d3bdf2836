// ESM loader hook: the DSH JSONL backend (and only it) gets the SimFS shims for node:fs,
// node:fs/promises, node:crypto and (in the route host) node:zlib. With `route`, every other
// DSH package gets the deterministic node:crypto too (its randomUUID names messages and
// approval requests). Everything else, including the shims themselves and the host, keeps the
// real modules.
import { registerHooks } from "node:module";

const shim = (file) => new URL(file, import.meta.url).href;
const CRYPTO = { "node:crypto": shim("./sim-crypto.mjs"), crypto: shim("./sim-crypto.mjs") };
const BACKEND = {
	"node:fs": shim("./sim-fs.mjs"),
	fs: shim("./sim-fs.mjs"),
	"node:fs/promises": shim("./sim-fs-promises.mjs"),
	"fs/promises": shim("./sim-fs-promises.mjs"),
	...CRYPTO,
};
const ZLIB = { "node:zlib": shim("./sim-zlib.mjs"), zlib: shim("./sim-zlib.mjs") };

export function install({ route = false } = {}) {
	const backend = route ? { ...BACKEND, ...ZLIB } : BACKEND;
	registerHooks({
		resolve(specifier, context, nextResolve) {
			const parent = context.parentURL ?? "";
			if (parent.includes("/@deepseek-ai/dsh-session-persistence-jsonl/") && Object.hasOwn(backend, specifier)) {
				return { url: backend[specifier], shortCircuit: true };
			}
			if (route && parent.includes("/@deepseek-ai/") && Object.hasOwn(CRYPTO, specifier)) {
				return { url: CRYPTO[specifier], shortCircuit: true };
			}
			return nextResolve(specifier, context);
		},
	});
}
