// Deterministic stand-in for node:crypto inside the DSH backend: randomBytes names the
// temporary file of a first publication; the simulator wants the same name on every replay.
import * as real from "node:crypto";
import { call } from "./channel.mjs";

export function randomBytes(size) {
	const reply = call({ fs: "randomBytes", args: { size } });
	return Buffer.from(reply.value, "base64");
}
export default { ...real, randomBytes };
export const createHash = real.createHash;
