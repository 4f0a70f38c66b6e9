"""What every layer of the project uses and no concept owns: atomic file writes and output claims (:mod:`.atomic`),
JSON lines (:mod:`.jsonl`), progress bars (:mod:`.progress`), CPU thread settings (:mod:`.threads`), one-line
unknown-key errors (:mod:`.keys`) and lazily loaded package exports (:mod:`.lazy_exports`). Standard library only."""
