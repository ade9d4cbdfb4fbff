"""The orchestration layer: the snac dialect (Stage, Notify, And Consume),
the protocol derived from the layouts, the phases bound to a world, snac-verify
and the SNAC machine it runs (scheduler and race checker; purlin.levels.snac
runs it with data)."""
