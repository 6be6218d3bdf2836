"""The committed starter corpus is what its generator writes (``python -m dsh_sim.drivers.corpus``):
a change to the generator — a new cut set, a renamed step — shows here, not as a corpus that
quietly tests something else than the code that claims to make it."""

from __future__ import annotations

import os

import attrs

from dsh_sim.drivers import corpus
from dsh_sim.scenario.files import dumps, load
from tests.support.paths import ROOT

STARTER = os.path.join(ROOT, "scenarios", "starter")


def test_every_generated_scenario_is_committed_as_generated():
    drifted, missing = [], []
    for scenario in corpus.build():
        path = os.path.join(STARTER, f"{scenario.name}.json")
        if not os.path.exists(path):
            missing.append(scenario.name)
            continue
        committed = load(path)
        # the digest is the one thing the generator learns by running (replay checks it)
        if dumps(attrs.evolve(committed, trace_digest=None)) != dumps(scenario):
            drifted.append(scenario.name)
    assert (missing, drifted) == ([], []), "regenerate: python -m dsh_sim.drivers.corpus scenarios/starter"


def test_the_check_sees_a_cut_the_generator_no_longer_makes(tmp_path, monkeypatch):
    """The committed torn cuts before the generator tore one byte short of each element end."""
    real = corpus._torn_cuts

    def first_byte_cuts(base, point, hit, **kw):
        return {
            cls: attrs.evolve(cut, files=tuple(attrs.evolve(f, torn_bytes=1) for f in cut.files))
            for cls, cut in real(base, point, hit, **kw).items()
        }

    monkeypatch.setattr(corpus, "_torn_cuts", first_byte_cuts)
    changed = [
        s.name for s in corpus.build() if dumps(attrs.evolve(load(os.path.join(STARTER, f"{s.name}.json")), trace_digest=None)) != dumps(s)
    ]
    assert "torn-zstd-magic" in changed


def test_each_torn_scenario_recovers_what_its_description_says():
    """A cut that drifted into the wrong block once left "the complete records of the first block
    are recovered" recovering nothing: each claim is checked against the recovery itself."""
    from dsh_sim.drivers.replay import run_scenario

    claims = {"re-appends": "records", "recovered": "records", "truncates": "truncated", "no torn tail": "clean"}
    checked = 0
    for scenario in corpus.torn_scenarios():
        _, sim = run_scenario(load(os.path.join(STARTER, f"{scenario.name}.json")))
        torn = [life.report.torn for life in sim.lifetimes[1:] if life.report is not None]
        assert len(torn) == 1, scenario.name
        found = "clean" if torn[0] is None else "records" if torn[0].recovered else "truncated"
        said = {claim for words, claim in claims.items() if words in scenario.description}
        assert found in said and (found != "truncated" or "records" not in said), (scenario.name, found, scenario.description)
        checked += 1
    assert checked >= 9
