"""Without the package: one clear line naming the extra; and turnbench never imports the
package (nor the provider SDKs it pulls) unless the AgentDojo seam is used."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from turnbench.benchmarks.agentdojo import upstream
from turnbench.errors import UserError

INSTALLED = importlib.util.find_spec("agentdojo") is not None


@pytest.mark.parametrize(
    "missing",
    [
        "agentdojo",
        pytest.param(
            "cohere",
            marks=pytest.mark.skipif(not INSTALLED, reason="needs the agentdojo extra"),
        ),
    ],
)
def test_a_missing_package_is_one_clear_line(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    """The package itself, or one of its dependencies, cannot be imported (a None entry in
    sys.modules makes `import` fail as an absent module does)."""
    for name in list(sys.modules):
        if name == "agentdojo" or name.startswith("agentdojo."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, missing, None)
    with pytest.raises(UserError) as caught:
        upstream.load()
    message = caught.value.message
    assert "\n" not in message
    assert "pip install 'turnbench[agentdojo]'" in message
    assert missing in message


def test_turnbench_and_its_benchmarks_never_import_the_package() -> None:
    """Importing turnbench, listing the built-in benchmarks (which imports every benchmark
    package, this one included) and importing the seam's modules loads neither agentdojo
    nor the SDKs only it needs."""
    code = (
        "import json, sys\n"
        "import turnbench\n"
        "from turnbench.benchmarks import builtin_benchmarks\n"
        "builtin_benchmarks()\n"
        "import turnbench.benchmarks.agentdojo.upstream\n"
        "import turnbench.benchmarks.agentdojo.envcache\n"
        "import turnbench.benchmarks.agentdojo.payloads\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('agentdojo', 'cohere', 'google', 'langchain', 'deepdiff'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(result.stdout) == []


@pytest.mark.skipif(not INSTALLED, reason="needs the agentdojo extra")
def test_another_release_of_the_package_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdicts must be the pinned release's (and a few private helpers are called)."""
    monkeypatch.setattr(upstream, "_installed_version", lambda: "0.1.36")
    with pytest.raises(UserError, match=r"built on agentdojo 0\.1\.35, found 0\.1\.36"):
        upstream.load()
