#!/usr/bin/env python3
"""An invoice-extraction benchmark built on `evaluator`: a nested typed output scored with partial credit.

    python examples/invoice_bench.py --model test --mode tool
    python examples/invoice_bench.py --model openai:gpt-4o-mini --number 20
    python main.py run --suite examples/invoice_bench.py --model test      # the same cases, stored as a run

Each case is a short invoice or order written in plain sentences; the model must return an `Invoice`: the
vendor, a currency (an enum), a list of line items, a payment that is either a card or a bank transfer (a
union told apart by its `method` field) and the total it computes. `grade` gives partial credit field by
field and says what it found in the score's details. The file is both a script and a suite file (it
defines `TASK` and `CASES`); it uses only the public `evaluator` API.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

import evaluator
from typed_eval.contracts import AnswerMode

# --- the output type ------------------------------------------------------------------------------------------


class Currency(StrEnum):  # a str enum (StrEnum: what ruff asks for on py311+)
    EUR = "EUR"
    USD = "USD"
    GBP = "GBP"


class LineItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(description="What was bought, in the singular, e.g. 'claw hammer'")
    quantity: int = Field(description="How many were bought")
    unit_price: float = Field(description="The price of one, in the invoice's currency")


class Card(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: Literal["card"] = Field(description="Paid by card")
    last4: str = Field(description="The card's last four digits")


class BankTransfer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: Literal["bank_transfer"] = Field(description="To be paid by bank transfer")
    iban: str = Field(description="The IBAN to pay to, without spaces")
    due_days: int = Field(description="Days allowed for the payment")


class Invoice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    vendor: str = Field(description="Who issued the invoice")
    currency: Currency = Field(description="The currency of every price (EUR for €, USD for $, GBP for £)")
    items: list[LineItem] = Field(description="Every line item, in the order the text gives them")
    payment: Card | BankTransfer = Field(discriminator="method", description="How the invoice is paid")
    total: float = Field(description="The amount due: the sum of quantity x unit price over the items")


# --- the cases ------------------------------------------------------------------------------------------------

VENDORS = (
    "Acme Tools",
    "Northwind Supplies",
    "Blue Harbor Books",
    "Kestrel Office",
    "Lumen Lighting",
    "Granite Garden Co",
    "Pixel Parts",
    "Orchard Kitchenware",
)
ITEMS = (
    ("claw hammer", 8, 25),
    ("aluminium ladder", 60, 140),
    ("screwdriver set", 12, 45),
    ("desk lamp", 18, 70),
    ("notebook", 2, 9),
    ("garden hose", 15, 40),
    ("extension cord", 7, 22),
    ("paint brush", 3, 12),
    ("storage crate", 9, 30),
    ("work glove", 4, 15),
)
"""(description, lowest and highest unit price): the plural adds an s."""
QUANTITIES = (1, 1, 2, 3, 4, 5, 10)
SYMBOLS = {Currency.EUR: "€", Currency.USD: "$", Currency.GBP: "£"}
IBAN_BANKS = {"DE": 18, "FR": 23, "NL": 14, "GB": 18}
"""Country code -> length of the account part (digits; real IBANs of GB and NL mix in letters)."""


def _iban(rng: random.Random) -> str:
    """A random IBAN with a valid check number (ISO 13616 mod 97)."""
    country = rng.choice(sorted(IBAN_BANKS))
    account = "".join(str(rng.randint(0, 9)) for _ in range(IBAN_BANKS[country]))
    digits = "".join(str(int(c, 36)) for c in account + country + "00")
    return f"{country}{98 - int(digits) % 97:02d}{account}"


def _grouped(iban: str) -> str:
    return " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))


def _money(amount: float, currency: Currency, symbol: bool) -> str:
    return f"{SYMBOLS[currency]}{amount:.2f}" if symbol else f"{amount:.2f} {currency.value}"


def _item_text(item: LineItem, currency: Currency, symbol: bool) -> str:
    what = item.description if item.quantity == 1 else item.description + "s"
    each = "" if item.quantity == 1 else " each"
    return f"{item.quantity} {what} at {_money(item.unit_price, currency, symbol)}{each}"


def _listed(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _text(invoice: Invoice, rng: random.Random) -> str:
    symbol = rng.random() < 0.5  # € 12.50 or 12.50 EUR
    items = _listed([_item_text(item, invoice.currency, symbol) for item in invoice.items])
    payment = invoice.payment
    if isinstance(payment, Card):
        pay = rng.choice(
            (
                f"It was charged to your card ending in {payment.last4}.",
                f"Paid in full by card (last four digits {payment.last4}).",
            )
        )
    else:
        pay = rng.choice(
            (
                f"Pay by bank transfer to IBAN {_grouped(payment.iban)} within {payment.due_days} days.",
                f"Please transfer the amount to {_grouped(payment.iban)} within {payment.due_days} days.",
            )
        )
    opening = rng.choice(
        (
            f"{invoice.vendor} bills you for {items}.",
            f"Invoice from {invoice.vendor}: {items}.",
            f"Thank you for your order with {invoice.vendor}. You bought {items}.",
        )
    )
    return f"{opening} {pay}"


def _invoice(rng: random.Random) -> Invoice:
    currency = rng.choice(list(Currency))
    items = [
        LineItem(description=name, quantity=rng.choice(QUANTITIES), unit_price=rng.randint(low * 4, high * 4) / 4)
        for name, low, high in rng.sample(ITEMS, rng.randint(1, 3))
    ]
    payment: Card | BankTransfer
    if rng.random() < 0.5:
        payment = Card(method="card", last4=f"{rng.randint(0, 9999):04d}")
    else:
        payment = BankTransfer(method="bank_transfer", iban=_iban(rng), due_days=rng.choice((7, 14, 30, 60)))
    total = round(sum(item.quantity * item.unit_price for item in items), 2)
    return Invoice(vendor=rng.choice(VENDORS), currency=currency, items=items, payment=payment, total=total)


def cases(number: int = 10, seed: int = 0) -> list[evaluator.Case]:
    """`number` invoices made from `seed`, grouped by payment method; `expected` is the right `Invoice`."""
    if number < 1:
        raise ValueError(f"number must be at least 1, got {number}")
    rng = random.Random(seed)
    made: list[evaluator.Case] = []
    for i in range(number):
        invoice = _invoice(rng)
        prompt = _text(invoice, rng)
        made.append(evaluator.Case(id=f"invoice-{i}", prompt=prompt, expected=invoice, group=invoice.payment.method))
    return made


# --- the scorer -----------------------------------------------------------------------------------------------

WEIGHTS = {"vendor": 1, "currency": 1, "items": 3, "payment": 2, "total": 1}
"""How much each part of the invoice counts in the score (a weighted mean)."""


def _words(text: str) -> str:
    """A description or name as compared: case, punctuation and a plural s do not matter."""
    words = re.findall(r"[a-z0-9]+", text.casefold())
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words)


def _same_payment(given: Card | BankTransfer, expected: Card | BankTransfer) -> bool:
    if isinstance(given, Card) and isinstance(expected, Card):
        return given.last4.strip() == expected.last4
    if isinstance(given, BankTransfer) and isinstance(expected, BankTransfer):
        iban = re.sub(r"\s+", "", given.iban).upper()
        return iban == expected.iban and given.due_days == expected.due_days
    return False


def grade(case: evaluator.Case, output: Invoice) -> evaluator.Score:
    """Partial credit: vendor, currency, payment (exact) and total (within 0.01) are right or wrong; the items
    are matched by description, each worth a third for being there and a third each for its quantity and
    unit price, over the expected items plus any extra ones. The value is the `WEIGHTS`-weighted mean."""
    expected = Invoice.model_validate(case.expected)
    unmatched = list(output.items)
    credit = 0.0
    found = exact = 0
    item_errors: list[str] = []
    for want in expected.items:
        match = next((item for item in unmatched if _words(item.description) == _words(want.description)), None)
        if match is None:
            item_errors.append(f"missing {want.description}")
            continue
        unmatched.remove(match)
        found += 1
        quantity_ok = match.quantity == want.quantity
        price_ok = abs(match.unit_price - want.unit_price) <= 0.005
        credit += (1 + quantity_ok + price_ok) / 3
        exact += quantity_ok and price_ok
        if not quantity_ok:
            item_errors.append(f"{want.description}: quantity {match.quantity}, expected {want.quantity}")
        if not price_ok:
            item_errors.append(f"{want.description}: unit price {match.unit_price:g}, expected {want.unit_price:g}")
    item_errors += [f"extra {item.description}" for item in unmatched]
    parts = {
        "vendor": float(_words(output.vendor) == _words(expected.vendor)),
        "currency": float(output.currency == expected.currency),
        "items": credit / (len(expected.items) + len(unmatched)) if expected.items or unmatched else 1.0,
        "payment": float(_same_payment(output.payment, expected.payment)),
        "total": float(abs(output.total - expected.total) <= 0.01 + 1e-9),
    }
    value = sum(WEIGHTS[name] * part for name, part in parts.items()) / sum(WEIGHTS.values())
    details: dict[str, Any] = {
        "items_expected": len(expected.items),
        "items_found": found,
        "items_missing": len(expected.items) - found,
        "items_extra": len(unmatched),
        "items_exact": exact,
        "wrong": [name for name, part in parts.items() if part < 1.0],
    }
    if item_errors:
        details["item_errors"] = item_errors
    return evaluator.Score(round(value, 4), details)


def item_metrics(totals: Mapping[str, float]) -> dict[str, float]:
    """Run-wide line-item figures (percent) from the item counts summed over the run's scored cases."""
    expected, found, extra = totals["items_expected"], totals["items_found"], totals["items_extra"]
    return {
        "item recall": 100 * found / expected if expected else 0.0,
        "item precision": 100 * found / (found + extra) if found + extra else 0.0,
        "items exact": 100 * totals["items_exact"] / expected if expected else 0.0,
    }


def instructions(mode: AnswerMode) -> str:
    ask = (
        "Extract the invoice in the user's text: the vendor, the currency, every line item (description in the "
        "singular, quantity, unit price), how it is paid and the total amount due, which you compute."
    )
    if mode == "tool":
        return f"{ask} Answer by calling the submit_invoice tool."
    if mode == "text":
        return (
            f"{ask} Reply with only a JSON object: "
            '{"vendor": str, "currency": "EUR" | "USD" | "GBP", '
            '"items": [{"description": str, "quantity": int, "unit_price": number}], '
            '"payment": {"method": "card", "last4": str} or {"method": "bank_transfer", "iban": str, '
            '"due_days": int}, "total": number}.'
        )
    return ask


EXAMPLE = Invoice(
    vendor="Acme Tools",
    currency=Currency.EUR,
    items=[
        LineItem(description="claw hammer", quantity=3, unit_price=12.5),
        LineItem(description="aluminium ladder", quantity=1, unit_price=89.0),
    ],
    payment=BankTransfer(method="bank_transfer", iban="DE44500105175407324931", due_days=30),
    total=126.5,
)
"""A valid output: what the offline `test` model answers to every case."""

TASK: evaluator.Task[Invoice] = evaluator.Task(
    name="invoices",
    output_type=Invoice,
    score=grade,
    instructions=instructions,
    tool_name="submit_invoice",
    tool_description="Submit the invoice extracted from the text.",
    aggregate="mean",
    metrics=item_metrics,
    example=EXAMPLE,
)
CASES = cases()


# --- the script -----------------------------------------------------------------------------------------------


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _report(result: evaluator.EvaluationResult, model: str, mode: str) -> None:
    scores = result.scores
    for g in scores.groups:
        score = "n/a" if g.score is None else f"{g.score:.2f}"
        print(f"{g.group}: {score} (C: {g.correct}, P: {g.partial}, I: {g.incorrect}, M: {g.missing}, E: {g.errors})")
    headline = "n/a" if scores.score is None else f"{scores.score:.2f}"
    print(f"invoices score: {headline}  ({model}, {mode} mode)")
    if scores.metrics:
        print("metrics: " + ", ".join(f"{name} {value:.2f}" for name, value in scores.metrics.items()))
    comp = scores.compliance
    first = "n/a" if comp.valid_first_try is None else f"{comp.valid_first_try:.1f}%"
    kinds = ", ".join(f"{kind} {n}" for kind, n in comp.invalid_by_kind.items()) or "none"
    print(
        f"format: valid first try {first}, corrective retries {comp.corrective_retries}, "
        f"invalid outputs {comp.invalid_outputs} ({kinds})"
    )
    totals = scores.totals
    if totals.cost_usd is None:
        cost = "unknown"
    else:
        bound = "" if totals.cost_complete else ", lower bound"
        cost = f"${totals.cost_usd:.6f} ({', '.join(totals.cost_sources)}{bound})"
    tokens = f"{totals.input_tokens} input / {totals.output_tokens} output tokens"
    print(f"cost: {cost}, {totals.requests} requests, {tokens}")
    if result.status != "finished":
        print(f"status: {result.status} ({result.reason})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", default="test", help="a pydantic-ai model string, or test (offline)")
    parser.add_argument("--mode", choices=["tool", "native", "prompted", "text"], default="tool")
    parser.add_argument("--number", type=_positive, default=10, help="invoices to pose (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    args = parser.parse_args(argv)
    try:
        result = asyncio.run(evaluator.evaluate(TASK, cases(args.number, args.seed), args.model, mode=args.mode))
    except evaluator.EvaluatorError as exc:
        print(f"invoice_bench: error: {exc}", file=sys.stderr)
        return 2
    _report(result, args.model, args.mode)
    return 0 if result.status != "dnf" else 3


if __name__ == "__main__":
    sys.exit(main())
