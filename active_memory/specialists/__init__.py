"""The four postmortem specialists (SPEC §1, §6); `providers` is the only part that talks
to a model."""
