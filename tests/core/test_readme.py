"""The README's set-up commands are the ones CI runs and they name real things."""

from __future__ import annotations

import re

from tests.helpers import REPO


def _commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section, flags=re.S)


def test_readme_has_exactly_two_setup_commands() -> None:
    assert len(_commands()) == 2


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert _commands()[1] in ci


def test_main_job_uses_a_bundled_fixture() -> None:
    main = _commands()[0]
    assert "trajconv convert --from grok --to fx" in main
    path = re.search(r"--to fx (\S+)", main)
    assert path and (REPO / path.group(1)).is_dir()


def test_exit_code_table_matches_the_one_module() -> None:
    from trajconv.errors import EXIT_CODES

    text = (REPO / "README.md").read_text()
    table = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", table, flags=re.M))
    assert {int(k) for k in rows} == set(EXIT_CODES)
    for code, meaning in EXIT_CODES.items():
        assert rows[str(code)].replace("`", "") == meaning
