"""Everything that makes chatmemory run on one laptop: the dev server, the CLI, tokens."""
