"""Refresh genai-prices' price data from the network for a run (`--update-prices`), for models released after
the package was installed. Off by default, so a run prices as the installed data does and can be reproduced.
genai-prices holds its data for the whole process: the data of before comes back when the run ends, so what a
library user prices after it (or a later run) is priced as before."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from genai_prices import UpdatePrices
from genai_prices.data_snapshot import get_snapshot, set_custom_snapshot
from genai_prices.update_prices import DEFAULT_UPDATE_URL

from typed_eval.core.errors import InputError
from typed_eval.core.secrets import Redactor
from typed_eval.providers.resolve import safe_url

__all__ = ["DEFAULT_UPDATE_URL", "updated_prices"]

_WAIT_S = 30.0


@contextmanager
def updated_prices(url: str) -> Iterator[None]:
    """genai-prices' background updater, started for the block: the first download is waited for (up to 30 s),
    so every sample is priced with it; one that fails is one line, not a run priced otherwise than asked."""
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError:
        raise InputError("not a URL (its port is not a number)", parameter="update_prices") from None
    if not parts.scheme.startswith("http"):
        raise InputError("give an http(s) URL of genai-prices' data", parameter="update_prices")
    before = get_snapshot()
    updater = UpdatePrices(url=url)
    updater.start()
    try:
        try:
            fetched = updater.wait(timeout=_WAIT_S)
        except Exception as exc:  # whatever the download or the data raised: the run does not start
            reason = Redactor.for_run(urls=[url])(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            raise InputError(
                f"cannot read price data from {safe_url(url)}: {reason}", parameter="update_prices"
            ) from None
        if not fetched:
            raise InputError(f"no price data from {safe_url(url)} within {_WAIT_S:g} s", parameter="update_prices")
        yield
    finally:
        updater.stop()  # type: ignore[no-untyped-call]
        set_custom_snapshot(before)
