"""What runs simulations: replay of a scenario, systematic exploration of its crash points, the
failure-path sweep, Hypothesis state machines (:mod:`.machines`), minimisation, the reader
differential, the mutant self-test and the generated starter corpus."""
