"""JSONL + zstd session persistence: layout, codec, write handles, write-behind, lock."""
