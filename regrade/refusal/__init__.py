"""The refusal slice (issue 48): negative controls made from a benchmark's own tasks, where the
only right outcome is to stop. Built so far: the sealed pack (:mod:`regrade.refusal.build`);
scoring abstentions, covariates and the locked protocol are not built yet."""
