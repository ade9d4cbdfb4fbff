"""The orchestration layer: the snac dialect (Stage, Notify, And Consume),
the protocol derived from the layouts, the SNAC machine (scheduler and race
checker), snac-verify and the snac-level interpreter."""
