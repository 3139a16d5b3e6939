"""Command families of the `active-memory` CLI; each module has `register(subcommands)`."""
