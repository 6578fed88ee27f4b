"""The command line: thin — parse arguments, call the layers, map errors to exit codes."""
