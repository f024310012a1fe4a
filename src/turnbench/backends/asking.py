"""Asking a role: one request, then as many more as the role's re-ask policy wants.

Every role is asked through this one loop (`ask`): a judge whose reply holds no verdict is
asked again with a follow-up, a simulated user whose turn broke a rule of its role is asked
to write it again, a role without a policy is asked once. What differs is the policy
(`ReaskPolicy`): given a reply, the next request (messages and parameters), or None to keep
the reply. Retries of a request that failed are not re-asks: the backend's one retry layer
(`backends.retry`) makes them inside each `complete`.

Nothing paid for is thrown away: when a request after the first fails (a 400 for context
length, say), the replies already received stay in `Asked.completions` and the failure in
`Asked.error`, so the role's record keeps them and a resume does not pay for them again.
Only a first request that fails raises: nothing was received.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from turnbench.errors import RequestFailedError
from turnbench.types import Completion, Message, RequestParams


class Sender(Protocol):
    async def complete(self, messages: list[Message], params: RequestParams) -> Completion: ...


class ReaskPolicy(Protocol):
    """A role's rule for asking again."""

    def after(self, completion: Completion) -> tuple[list[Message], RequestParams] | None:
        """The next request after `completion` (its messages and parameters), or None: the
        reply is kept and the asking ends."""
        ...


@dataclass
class Asked:
    """The replies one asking received, in order, and the failure that ended it early."""

    completions: list[Completion] = field(default_factory=list)
    error: RequestFailedError | None = None
    batch_id: str | None = None  # the provider batch its first request went through

    @property
    def last(self) -> Completion:
        return self.completions[-1]


async def ask(
    sender: Sender,
    messages: list[Message],
    params: RequestParams,
    policy: ReaskPolicy | None = None,
) -> Asked:
    """Send `messages`, then each request `policy` asks for, until it keeps a reply."""
    asked = Asked()
    request, request_params = messages, params
    while True:
        try:
            completion = await sender.complete(request, request_params)
        except RequestFailedError as error:
            if not asked.completions:
                raise
            asked.error = error
            return asked
        asked.completions.append(completion)
        following = policy.after(completion) if policy is not None else None
        if following is None:
            return asked
        request, request_params = following
