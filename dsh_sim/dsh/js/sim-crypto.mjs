// Deterministic stand-in for node:crypto inside DSH's packages: randomBytes names the
// temporary file of a first publication; the simulator wants the same name on every replay.
import * as real from "node:crypto";
import { call } from "./channel.mjs";

export function randomBytes(size) {
	const reply = call({ fs: "randomBytes", args: { size } });
	return Buffer.from(reply.value, "base64");
}
// randomUUID (message, approval and session ids in the route host): a per-process counter
// under the simulator's seed, set by the host before any package runs; the real one otherwise.
export function randomUUID() {
	const make = globalThis.__dshSimUuid;
	return make === undefined ? real.randomUUID() : make();
}
export default { ...real, randomBytes, randomUUID };
export const createHash = real.createHash;
