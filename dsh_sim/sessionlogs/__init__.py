"""Session logs on the real filesystem: locate, inspect (read-only), and the runtime's own repair and migration."""
