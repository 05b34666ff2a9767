"""A record is redacted text by text only when its JSON may hold a secret: one pass of the pattern over the JSON
decides, and a secret JSON would escape (a quote, a backslash, a control character) is always looked for text by
text."""

from __future__ import annotations

import base64

from typed_eval.contracts import Attempt, Cost, SampleRecord, TokenUsage
from typed_eval.core.secrets import REDACTED, Redactor, _may_hold_secret, _redacted

KEY = "sk-test-0123456789"


def record(output: str, metadata: dict[str, object] | None = None) -> SampleRecord:
    return SampleRecord(
        case_id="c",
        mode="tool",
        status="correct",
        output=output,
        metadata=metadata or {},
        attempts=[Attempt(valid=True, raw=output)],
        corrective_retries=0,
        usage=TokenUsage(requests=1),
        cost=Cost(usd=None, source="unknown"),
        latency_s=0.1,
    )


def test_the_json_may_hold_a_secret_when_the_pattern_finds_one_in_it_in_any_of_its_forms() -> None:
    redact = Redactor([KEY])
    encoded = base64.b64encode(KEY.encode()).decode()
    assert redact.may_be_in_json('{"output": "the key is ' + KEY + '"}')
    assert redact.may_be_in_json('{"output": "' + encoded + '"}')
    assert redact.may_be_in_json('{"' + KEY + '": 1}')  # a key: looked for text by text, which leaves keys alone
    assert not redact.may_be_in_json('{"output": "no secret here"}')
    assert not Redactor().may_be_in_json('{"output": "' + KEY + '"}')  # no secret known


def test_a_secret_json_escapes_is_always_looked_for_text_by_text() -> None:
    assert Redactor(['pa"ss-word']).may_be_in_json('{"output": "nothing"}')
    assert Redactor(["pa\\ss-word"]).may_be_in_json('{"output": "nothing"}')
    assert Redactor(["pass\nword"]).may_be_in_json('{"output": "nothing"}')


def test_a_record_is_redacted_exactly_when_one_of_its_texts_holds_a_secret() -> None:
    redact = Redactor([KEY, 'x"quoted"secret'])
    for found in (
        record(f"echoed {KEY}"),
        record("fine", {"deep": [{"text": f"a {KEY} b"}]}),
        record('a x"quoted"secret here'),
    ):
        assert _may_hold_secret(found, redact)
        redacted = SampleRecord.model_validate(_redacted(found.model_dump(mode="json"), redact))
        assert REDACTED in redacted.model_dump_json() and KEY not in redacted.model_dump_json()
    clean = record("nothing to hide", {"deep": [{"text": "plain"}]})
    assert not _may_hold_secret(clean, Redactor([KEY]))
    assert _redacted(clean.model_dump(mode="json"), Redactor([KEY])) == clean.model_dump(mode="json")


def test_a_record_json_cannot_hold_is_walked_text_by_text() -> None:
    assert _may_hold_secret(record("a lone surrogate \ud800"), Redactor([KEY]))
