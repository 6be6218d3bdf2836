"""The session event log: envelopes, the in-memory ``Session``, and crash repair."""
