"""Runs the injection catalogue (tests/injection/*.json) through toolgate-mcp-gateway with the
official Python MCP SDK as the client: per trace a fresh gateway (a fresh session) in front of
injection_upstream.py, the person's request in `_meta["dev.toolgate/personRequest"]` on the
trace's first call, then each call in order. Prints, per domain (under its provenance policy), security (attacked
traces with an attacker call held or refused) and utility (clean traces whose calls all ran),
then one JSON line with every verdict (`verdicts: {...}`) for the Rust test to compare with the
library's.

usage: injection.py GATEWAY_BINARY CATALOGUE_DIR WORK_DIR
"""

import asyncio
import json
import os
import sys
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import ElicitResult

HERE = Path(__file__).resolve().parent
PERSON = "dev.toolgate/personRequest"
gateway, catalogue, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
work.mkdir(parents=True, exist_ok=True)


async def nobody(_context, _params) -> ElicitResult:
    # A held call is put to the person, who is not there: it does not run.
    return ElicitResult(action="decline")


async def run(domain_file: Path, policy: dict, scenario: dict, attacked: bool) -> list[tuple[bool, bool]]:
    results = dict(scenario.get("results", {}))
    if attacked:
        results.update(scenario.get("injected", {}))
    (work / "results.json").write_text(json.dumps(results), encoding="utf-8")
    (work / "policy.json").write_text(json.dumps(policy), encoding="utf-8")
    record = work / "record.jsonl"
    record.write_text("", encoding="utf-8")
    params = StdioServerParameters(
        command=gateway,
        args=["--policy", str(work / "policy.json"), "--",
              sys.executable, str(HERE / "injection_upstream.py"), str(domain_file),
              str(work / "results.json"), str(record)],
        env=dict(os.environ),
    )
    outcomes = []
    async with Client(params, mode="legacy", elicitation_callback=nobody) as client:
        for index, step in enumerate(scenario["attacked" if attacked else "clean"]):
            tool, arguments = step[0], step[1]
            meta = {PERSON: scenario["person"]} if index == 0 else None
            try:
                result = await client.call_tool(tool, arguments, meta=meta)
                ran = not result.is_error
            except Exception:  # noqa: BLE001 - a protocol error is a refusal
                ran = False
            outcomes.append((ran, len(step) > 2 and step[2] == "attack"))
    return outcomes


async def main() -> None:
    verdicts = {}
    for name in ["payments", "messaging", "travel", "workspace"]:
        domain_file = catalogue / f"{name}.json"
        domain = json.loads(domain_file.read_text(encoding="utf-8"))
        # The baseline policies run through the library only (tests/policy/injection_catalogue.rs).
        for label, key in [("provenance", "policy")]:
            # Written beside the policy, and held out (written without seeing it).
            counts = {False: [0, 0, 0], True: [0, 0, 0]}
            for scenario in domain["scenarios"]:
                attack = await run(domain_file, domain[key], scenario, True)
                calm = await run(domain_file, domain[key], scenario, False)
                was_stopped = any(attack_call and not ran for ran, attack_call in attack)
                ran_clean = all(ran for ran, _ in calm)
                count = counts[scenario.get("heldout") is True]
                count[0] += was_stopped
                count[1] += ran_clean
                count[2] += 1
                verdicts[f"{name}/{label}/{scenario['id']}"] = [was_stopped, ran_clean]
            for held_out, (stopped, clean, total) in counts.items():
                kind = "held out" if held_out else "written"
                print(f"{name:<10} {label:<10} {kind:<8} security {stopped:>2}/{total}   "
                      f"utility {clean:>2}/{total}")
    print("verdicts: " + json.dumps(verdicts, sort_keys=True))


asyncio.run(main())
