"""The helpers several modules share: a folder written whole or not at all, and the scratch
environment every native CLI runs in."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from proof import npm
from trajconv.errors import RefusedError
from trajconv.staging import staged_folder


class Boom(RuntimeError):
    pass


def test_a_staged_folder_appears_whole(tmp_path: Path) -> None:
    dest = tmp_path / "deep" / "out"
    with staged_folder(dest) as staging:
        (staging / "a.txt").write_text("a")
        assert not dest.exists()  # nothing at the destination while it is written
        assert staging.parent == dest.parent and staging.name.startswith(".out.")
    assert (dest / "a.txt").read_text() == "a"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["out"]


def test_a_failed_staged_folder_leaves_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "out"
    with pytest.raises(Boom), staged_folder(dest) as staging:
        (staging / "a.txt").write_text("half")
        raise Boom
    assert list(tmp_path.iterdir()) == []


def test_an_empty_destination_is_filled_and_a_used_one_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with staged_folder(empty) as staging:
        (staging / "x").write_text("x")
    assert (empty / "x").exists()
    refusal = pytest.raises(RefusedError, match="refusing to import into it")
    with refusal, staged_folder(empty, "refusing to import into it"):
        pass  # pragma: no cover - refused before the block runs
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "missing")
    with pytest.raises(RefusedError, match="not an empty folder"), staged_folder(link):
        pass  # pragma: no cover


def test_a_destination_taken_while_writing_is_not_replaced(tmp_path: Path) -> None:
    dest = tmp_path / "out"
    with pytest.raises(RefusedError), staged_folder(dest) as staging:
        (staging / "mine").write_text("mine")
        dest.mkdir()
        (dest / "theirs").write_text("theirs")  # someone else wrote there meanwhile
    assert sorted(p.name for p in dest.iterdir()) == ["theirs"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_scratch_env_keeps_only_what_a_run_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:1")
    monkeypatch.setenv("TZ", "Europe/Paris")
    monkeypatch.setenv("npm_config_registry", "http://registry.example")
    monkeypatch.delenv("LANG", raising=False)
    env = npm.scratch_env(tmp_path, {"CLI_HOME": "x"})
    assert "ANTHROPIC_API_KEY" not in env and "HTTPS_PROXY" not in env
    assert "npm_config_registry" not in env
    assert env["TZ"] == "Europe/Paris" and env["LANG"] == "C.UTF-8"
    assert env["HOME"] == str(tmp_path) and env["CLI_HOME"] == "x"
    assert env["XDG_STATE_HOME"] == str(tmp_path / ".local" / "state")
    assert npm.scratch_env(tmp_path, passed=("PATH",)).keys().isdisjoint({"TZ"})
    install = npm.install_env(tmp_path)  # npm reaches the registry, nothing else
    assert install["HTTPS_PROXY"] == "http://proxy:1"
    assert install["npm_config_registry"] == "http://registry.example"
    assert "ANTHROPIC_API_KEY" not in install


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_cli_version_runs_in_a_throw_away_home(tmp_path: Path) -> None:
    exe = _script(tmp_path / "cli", 'echo "cli 1.2.3 home=$HOME"; touch "$HOME/.written"')
    out = npm.cli_version(exe, npm.scratch_env, Boom)
    assert out.startswith("cli 1.2.3 home=")
    home = Path(out.split("home=")[1])
    assert home != Path.home() and not home.exists()  # removed with what the CLI wrote
    failing = _script(tmp_path / "bad", 'echo "no such flag" >&2; exit 2')
    with pytest.raises(Boom, match=r"--version failed \(rc 2\): no such flag"):
        npm.cli_version(failing, npm.scratch_env, Boom)
    with pytest.raises(Boom, match="cannot run"):
        npm.cli_version(tmp_path / "missing", npm.scratch_env, Boom)


def test_package_version_reads_the_installed_package(tmp_path: Path) -> None:
    pkg = tmp_path / "node_modules" / "@scope" / "cli"
    pkg.mkdir(parents=True)
    assert npm.package_version(tmp_path, "@scope/cli") is None
    (pkg / "package.json").write_text('{"version": "1.0.0"}')
    assert npm.package_version(tmp_path, "@scope/cli") == "1.0.0"
    (pkg / "package.json").write_text("[1]")
    assert npm.package_version(tmp_path, "@scope/cli") is None


def test_install_pinned_installs_only_when_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Path, list[str], dict[str, str]]] = []

    def fake_install(prefix: Path, specs: list[str], **kw: object) -> None:
        home_env = kw["home_env"]
        assert callable(home_env)
        calls.append((prefix, specs, home_env(Path("/scratch"))))
        (prefix / "bin").mkdir(parents=True)

    monkeypatch.setattr(npm, "npm_install", fake_install)

    def find(tools: Path) -> Path | None:
        exe = tools / "npm-x" / "bin"
        return exe if exe.exists() else None

    got = npm.install_pinned(find, tmp_path, "npm-x", "x@1", Boom, 5, {"X_HOME": ".x"})
    assert got == tmp_path / "npm-x" / "bin"
    assert calls == [(tmp_path.absolute() / "npm-x", ["x@1"], {"X_HOME": "/scratch/.x"})]
    npm.install_pinned(find, tmp_path, "npm-x", "x@1", Boom)
    assert len(calls) == 1  # found: not installed again
    with pytest.raises(Boom, match="holds no working CLI"):
        npm.install_pinned(lambda _t: None, tmp_path / "other", "npm-y", "y@1", Boom)


def test_run_names_what_could_not_start(tmp_path: Path) -> None:
    exe = tmp_path / "not-executable"
    exe.write_text("#!/bin/sh\n")
    with pytest.raises(Boom, match="cannot run"):
        npm.run([exe, "--flag"], tmp_path, {}, 5, Boom)
