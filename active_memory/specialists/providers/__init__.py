"""Model providers: the only part of Active Memory that speaks to a model (DESIGN.md).

`open_session(lane, specialist, deadline=..., options=...)` returns a session whose
`ask(prompt, AnswerModel)` gives a validated answer and its usage. See docs/providers.md.
The SDK adapters are imported only when a session of their kind is opened.
"""

from __future__ import annotations

from active_memory.specialists.kinds import SpecialistName as SpecialistName
from active_memory.specialists.providers.base import BaseSession as BaseSession
from active_memory.specialists.providers.base import Message as Message
from active_memory.specialists.providers.base import ProviderSession as ProviderSession
from active_memory.specialists.providers.base import Reply as Reply
from active_memory.specialists.providers.base import Usage as Usage
from active_memory.specialists.providers.base import input_digest as input_digest
from active_memory.specialists.providers.factory import SessionOptions as SessionOptions
from active_memory.specialists.providers.factory import open_session as open_session
from active_memory.specialists.providers.retry import RetryPolicy as RetryPolicy
