"""`line.effects_of`: one parse per command string, shared by every consumer."""

from __future__ import annotations

from testbed.analysis import impact, study
from testbed.analysis.attribution import command_effects
from testbed.analysis.command import effects_of
from testbed.analysis.command.line import next_cwd
from testbed.analysis.impact import classify
from testbed.analysis.safety import DEFAULT_POLICY
from testbed.analysis.study import study_classify
from testbed.server.envapi.actions import RewardConfig, is_diagnostic


def test_one_step_per_simple_command_in_order() -> None:
    line = effects_of("sudo systemctl stop nginx && cd /srv && rm -rf old")
    assert [s.command.argv for s in line.steps] == [
        ("sudo",),
        ("systemctl", "stop", "nginx"),
        ("cd", "/srv"),
        ("rm", "-rf", "old"),
    ]
    assert line.steps[-1].writes[0].value == "/srv/old"  # resolved against the cd
    assert not line.failed


def test_impact_safety_study_attribution_and_envapi_share_one_parse() -> None:
    command = "sudo systemctl stop nginx; pkill -HUP php-fpm # unique 1f3a"
    for cache in (effects_of, impact._hits, study._hits, command_effects):
        cache.cache_clear()
    classify(command)
    DEFAULT_POLICY.evaluate(command)
    study_classify(command)
    command_effects(command)
    is_diagnostic(command, RewardConfig().diagnostic_res())
    info = effects_of.cache_info()
    # one parse; classify and evaluate share impact's cached hits, the other three reuse it
    assert (info.misses, info.hits) == (1, 3)
    assert effects_of(command) is effects_of(command)


def test_next_cwd() -> None:
    assert next_cwd(None, "/srv//app/") == "/srv/app"
    assert next_cwd("/srv", "../etc") == "/etc"
    assert next_cwd("/srv", "~/x") is None
    assert next_cwd(None, "rel") is None
    assert next_cwd("/srv", "-") is None
