"""python assertions of the parity case file, run by promptfoo and by typed-eval alike."""


def get_assert(output, context):
    return {"pass": "Paris" in output, "score": 0.25 if "Paris" in output else 0.0, "reason": context["vars"]["city"]}


def words(output, context):
    return len(output.split())


def fraction(output, context):
    return "0.75 of it"


def no_reason(output, context):
    return {"pass": True, "score": 1}
