"""Scenario files: the typed model (:mod:`.model`), its one parse per file (:mod:`.files`,
:mod:`.codec`), the step vocabulary, the published JSON schema and reference, and the seeding of
historical v0 logs."""
