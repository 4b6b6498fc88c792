"""The visit-state picture in ARCHITECTURE.md is the one ``tools/visit_states.py`` draws from the table."""

from __future__ import annotations

import re

import pytest

from frontier.visit_state import TRANSITIONS, Phase
from tools import visit_states


def test_architecture_md_shows_the_current_transition_table() -> None:
    _, shown, _ = visit_states.split(visit_states.ARCHITECTURE.read_text())
    assert shown == visit_states.render(), (
        "ARCHITECTURE.md's visit-state diagram differs from frontier/visit_state.py's TRANSITIONS: "
        "run `python -m tools.visit_states --write`"
    )


def test_the_diagram_has_one_arrow_per_transition_and_nothing_else() -> None:
    arrows = re.findall(r"^    (\w+) --> (\w+): (\w+)$", visit_states.render(), flags=re.MULTILINE)
    drawn = {(Phase[source], event): Phase[target] for source, target, event in arrows}
    assert len(arrows) == len(drawn) and drawn == TRANSITIONS


def test_the_text_table_names_every_transition() -> None:
    rows = re.findall(r"^(\S+)\s+--(\w+)-->\s+(\w+)$", visit_states.render(), flags=re.MULTILINE)
    listed = set()
    for source, event, target in rows:
        for phase in Phase if source == "(any)" else [Phase[source]]:
            listed.add(((phase, event), Phase[target]))
    assert listed == set(TRANSITIONS.items())


def test_birth_and_end_come_from_the_table() -> None:
    diagram = visit_states.render()
    assert "[*] --> NEW" in diagram and "PURGED --> [*]" in diagram
    table = {(Phase.NEW, "go"): Phase.READY, (Phase.READY, "stop"): Phase.BROKEN}
    assert visit_states.initial_phases(table) == [Phase.NEW, Phase.RESOLVING, Phase.ACQUIRED, Phase.PURGED]
    assert visit_states.final_phases(table) == [Phase.RESOLVING, Phase.ACQUIRED, Phase.BROKEN, Phase.PURGED]


def test_write_replaces_only_the_block() -> None:
    document = f"# Title\n\nprose\n\n{visit_states.BEGIN}\nstale picture\n{visit_states.END}\n\nmore prose\n"
    updated = visit_states.replace_block(document, "new picture\n")
    assert updated == f"# Title\n\nprose\n\n{visit_states.BEGIN}\nnew picture\n{visit_states.END}\n\nmore prose\n"
    assert visit_states.split(updated)[1] == "new picture\n"
    with pytest.raises(ValueError, match="markers"):
        visit_states.replace_block("# no markers here\n", "new picture\n")
