"""The model-call engine: calls of any kind of work to language-model endpoints (engine/DESIGN.md).

Only the registry is imported here (it needs no models), so apps can register kinds from `ready()`.
"""

from .registry import AskAgain, CallRefused, GiveUp, Request, handler_for, register, registered_kinds

__all__ = ["AskAgain", "CallRefused", "GiveUp", "Request", "handler_for", "register", "registered_kinds"]
