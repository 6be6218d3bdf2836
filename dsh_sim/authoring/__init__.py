"""What a scenario's author reads and starts from: the language reference page and ``dsh-sim new``'s templates."""
