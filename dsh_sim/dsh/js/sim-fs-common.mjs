// Shared plumbing of the SimFS shims: forward one filesystem operation to the simulator and
// turn its answer into what node:fs would have returned or thrown.
import { call } from "./channel.mjs";

export function fsCall(op, args) {
	const reply = call({ fs: op, args });
	if (reply.ok) return reply.value;
	const e = reply.error;
	const error = new Error(`${e.code}: ${e.message}, ${op} '${args.path ?? args.dst ?? ""}'`);
	error.code = e.code;
	error.errno = -e.errno;
	error.syscall = op;
	if (args.path !== undefined) error.path = args.path;
	throw error;
}

export function makeStats(s, bigint) {
	const num = bigint ? BigInt : Number;
	return {
		dev: num(s.dev),
		ino: num(s.ino),
		size: num(s.size),
		mode: num(s.isDir ? 0o40700 : 0o100600),
		mtimeNs: bigint ? BigInt(s.mtimeNs) : undefined,
		ctimeNs: bigint ? BigInt(s.ctimeNs) : undefined,
		mtimeMs: Number(BigInt(s.mtimeNs) / 1000000n),
		ctimeMs: Number(BigInt(s.ctimeNs) / 1000000n),
		isDirectory: () => s.isDir,
		isFile: () => !s.isDir,
		isSymbolicLink: () => false,
	};
}

export function makeDirent(parent, entry) {
	return {
		name: entry.name,
		parentPath: parent,
		path: parent,
		isDirectory: () => entry.isDir,
		isFile: () => !entry.isDir,
		isSymbolicLink: () => false,
	};
}
