// Line-oriented JSON channel to the Python side, fully synchronous.
// Requests and fs replies arrive on fd 0 (read with readSync, never through process.stdin, so the
// descriptor stays blocking); messages to Python go to the descriptor named by DSH_SIM_BRIDGE_FD,
// so nothing another module prints on stdout can corrupt the protocol.
import { readSync, writeSync } from "node:fs";

const OUT = Number(process.env.DSH_SIM_BRIDGE_FD ?? "1");
const chunk = Buffer.alloc(1 << 16);
let pending = Buffer.alloc(0);

export function readLine() {
	for (;;) {
		const nl = pending.indexOf(10);
		if (nl !== -1) {
			const line = pending.subarray(0, nl).toString("utf8");
			pending = pending.subarray(nl + 1);
			return line;
		}
		let n;
		try {
			n = readSync(0, chunk, 0, chunk.length, null);
		} catch (error) {
			if (error.code === "EAGAIN") continue;
			throw error;
		}
		if (n === 0) return undefined;
		pending = Buffer.concat([pending, chunk.subarray(0, n)]);
	}
}

export function send(message) {
	const data = Buffer.from(JSON.stringify(message) + "\n", "utf8");
	let off = 0;
	while (off < data.length) off += writeSync(OUT, data, off, data.length - off);
}

// One synchronous round trip (the fs shim's only transport).
export function call(message) {
	send(message);
	const line = readLine();
	if (line === undefined) throw new Error("dsh-sim bridge: the simulator closed the channel");
	return JSON.parse(line);
}
