"""create_app itself: local mode (no users, so no authentication) only on a loopback address,
whoever builds the app; and the server package loads no model runtime when imported."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memorybank import ConfigurationError, MemoryBank
from memorybank.server.app import LOOPBACK_HOSTS, create_app
from memorybank.services.accounts import Accounts
from server_helpers import settings_for


def test_the_factory_serves_local_mode_on_loopback_only(bank: MemoryBank) -> None:
    settings = settings_for(bank)
    accounts = Accounts.open(bank, settings)
    for host in sorted(LOOPBACK_HOSTS):
        assert create_app(bank, accounts, settings, host=host).state.accounts is accounts
    for host in ("0.0.0.0", "192.168.1.20", "::"):
        with pytest.raises(ConfigurationError) as refused:
            create_app(bank, accounts, settings, host=host)
        message = str(refused.value)
        assert f"refusing to listen on {host!r}" in message
        assert "local mode" in message and "create-user" in message
    # Once a user exists every request needs an API key: any address will do.
    accounts.create_user("alice")
    assert create_app(bank, accounts, settings, host="0.0.0.0").state.accounts is accounts


def test_importing_the_server_loads_no_model_runtime() -> None:
    code = (
        "import json, sys\nimport memorybank.server.app\n"
        "print(json.dumps([m for m in ('onnxruntime', 'onnx', 'tokenizers') if m in sys.modules]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(result.stdout) == []
