"""Active Memory packaged the way each harness installs things (a Claude Code plugin
marketplace in this repository): files rendered from the installers' own rules and
committed, so that the harness's own install command is the whole install
(docs/plugins.md)."""
