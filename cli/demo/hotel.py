"""The hotel the demo agent works for: its tools, their errors and the hints.

This is the hotel-booking agent of the corrective-prompting write-up (seed 002)
redone in Python: ``check_availability`` and ``create_reservation`` for the
concierge, ``list_arrivals``, ``send_confirmation`` and ``charge_deposit`` for
the back office. Tools validate their arguments for real and raise
``HotelError`` with a stable code; the agent loop (``run``) decides what the
model is told, depending on the mode:

- ``crash``: the exception escapes the loop; the model never sees it.
- ``blind``: the raw error JSON, ``{"error": code, "message": ...}``.
- ``corrective``: the same plus a specific ``hint`` and ``retriesRemaining``.

Every tool advances the demo's fake clock by a fixed latency, so the records
are the same on every run.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ROOMS: dict[str, tuple[str, ...]] = {
    "single": ("S-101", "S-102", "S-103"),
    "double": ("D-201", "D-202", "D-203", "D-204"),
    "suite": ("X-301",),
}
NIGHTLY_RATE = {"single": 9500, "double": 14000, "suite": 32000}

# Stable error code -> (retryable, hint). The hint is the corrective prompt:
# it tells the model what was wrong and what to do next.
ERROR_HINTS: dict[str, tuple[bool, str]] = {
    "invalid_date_format": (True, "Dates must be YYYY-MM-DD format, e.g. 2026-03-15. Convert any natural language dates."),
    "checkout_before_checkin": (True, "check_out must be at least 1 day after check_in. Swap the dates if the guest gave them in reverse."),
    "unknown_room_type": (True, "Valid room types: 'single', 'double', 'suite'. Map the guest's wording to one of them."),
    "no_rooms_available": (True, "Try a different room_type or date range, then ask the guest which option they prefer."),
    "reservation_conflict": (False, "Room was just taken. Call check_availability again and offer one of the rooms it returns."),
    "missing_required_field": (True, "All required fields must be non-empty. Ask the guest for the missing value; never invent it."),
    "service_unavailable": (True, "The payment gateway is temporarily down. Call charge_deposit again in your next step."),
    "reservation_not_found": (False, "Use a reservation_id returned by list_arrivals or create_reservation."),
    "unknown_tool": (False, "Use one of the tools listed in your tool definitions."),
}

# Milliseconds each tool takes on the fake clock (per attempt for the gateway).
TOOL_LATENCY_MS = {
    "check_availability": 140,
    "create_reservation": 320,
    "list_arrivals": 90,
    "send_confirmation": 210,
    "charge_deposit": 450,
}
GATEWAY_BACKOFF_MS = 500
GATEWAY_ATTEMPTS = 3

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class HotelError(Exception):
    """A tool failure with a stable code (the keys of ``ERROR_HINTS``).

    Args:
        code: the stable error code.
        message: the backend's own terse text (what a blind loop shows).
        transient: the failure came from a flaky dependency, not the request.
    """

    def __init__(self, code: str, message: str, *, transient: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.transient = transient


class GatewayUnavailable(Exception):
    """The payment gateway answered HTTP 503."""


def blind_result(exc: HotelError) -> str:
    """The tool result a blind loop hands the model: the raw error JSON."""
    return json.dumps({"error": exc.code, "message": exc.message})


def corrective_result(exc: HotelError, errors_before: int, max_retries: int) -> str:
    """The tool result a corrective loop hands the model: error, hint, retries left.

    The first ``max_retries`` errors of a prompt are enriched with the hint
    (seed 002's ``MAX_TOOL_RETRIES``); after that the model is told to stop.
    """
    body: dict[str, Any] = {"error": exc.code, "message": exc.message}
    if errors_before < max_retries:
        body["hint"] = ERROR_HINTS[exc.code][1]
        body["retriesRemaining"] = max_retries - errors_before - 1
    else:
        body["message"] = f"{exc.message} (max retries exceeded: stop calling this tool and tell the guest what happened)"
        body["retriesRemaining"] = 0
    return json.dumps(body)


@dataclass
class Booking:
    """One reservation held by the hotel."""

    reservation_id: str
    room: str
    check_in: dt.date
    check_out: dt.date
    guest_name: str


@dataclass
class Hotel:
    """One hotel's state for one demo conversation.

    Args:
        advance_ms: moves the demo's fake clock; every tool calls it.
        bookings: reservations that exist before the conversation starts.
        gateway_failures: how many of the next payment-gateway requests answer
            503 (the back office scenarios script outages with it).
        next_id: the number of the next reservation id.
    """

    advance_ms: Callable[[int], None]
    bookings: list[Booking] = field(default_factory=list)
    gateway_failures: int = 0
    next_id: int = 1001
    charges: list[str] = field(default_factory=list)
    confirmations: list[str] = field(default_factory=list)

    # -- world events (not tools) -------------------------------------------

    def book_elsewhere(self, room: str, check_in: str, check_out: str, guest_name: str) -> None:
        """Another channel (front desk, an OTA) books a room: a race the agent loses."""
        self.bookings.append(Booking(self._new_id(), room, _date(check_in), _date(check_out), guest_name))

    # -- tools ----------------------------------------------------------------

    def execute(self, name: str, args: dict[str, Any], on_retry: Callable[[BaseException], None]) -> str:
        """Run tool ``name``; returns its JSON result or raises ``HotelError``.

        ``on_retry`` is told about every transient attempt the tool retries
        internally (the collector counts them as ``attempts``).
        """
        tools: dict[str, Callable[..., Any]] = {
            "check_availability": self.check_availability,
            "create_reservation": self.create_reservation,
            "list_arrivals": self.list_arrivals,
            "send_confirmation": self.send_confirmation,
            "charge_deposit": lambda **kw: self.charge_deposit(on_retry=on_retry, **kw),
        }
        if name not in tools:
            raise HotelError("unknown_tool", f"no tool named {name}")
        if name != "charge_deposit":
            self.advance_ms(TOOL_LATENCY_MS[name])
        return json.dumps(tools[name](**args), sort_keys=True)

    def check_availability(self, check_in: str, check_out: str, room_type: str) -> dict[str, Any]:
        """Free rooms of one type for a stay."""
        start, end = _stay(check_in, check_out)
        rooms = self._free(_room_type(room_type), start, end)
        if not rooms:
            raise HotelError("no_rooms_available", "no rooms")
        return {"room_type": room_type, "rooms": rooms, "nightly_rate_cents": NIGHTLY_RATE[room_type]}

    def create_reservation(self, guest_name: str, room: str, check_in: str, check_out: str) -> dict[str, Any]:
        """Book one room for a guest."""
        if not guest_name.strip():
            raise HotelError("missing_required_field", "missing field")
        start, end = _stay(check_in, check_out)
        room_type = next((t for t, rooms in ROOMS.items() if room in rooms), None)
        if room_type is None:
            raise HotelError("unknown_room_type", f"unknown room {room}")
        if room not in self._free(room_type, start, end):
            raise HotelError("reservation_conflict", "conflict")
        booking = Booking(self._new_id(), room, start, end, guest_name)
        self.bookings.append(booking)
        return {"reservation_id": booking.reservation_id, "room": room, "status": "confirmed"}

    def list_arrivals(self, date: str) -> dict[str, Any]:
        """Reservations checking in on ``date``."""
        day = _date(date, "date")
        ids = [b.reservation_id for b in self.bookings if b.check_in == day]
        return {"date": date, "reservation_ids": ids}

    def send_confirmation(self, reservation_id: str) -> dict[str, Any]:
        """E-mail the guest their confirmation."""
        self._booking(reservation_id)
        self.confirmations.append(reservation_id)
        return {"reservation_id": reservation_id, "sent": True}

    def charge_deposit(self, reservation_id: str, amount_cents: int, on_retry: Callable[[BaseException], None]) -> dict[str, Any]:
        """Charge the deposit through the payment gateway, retrying 503s inside the tool."""
        self._booking(reservation_id)
        for attempt in range(1, GATEWAY_ATTEMPTS + 1):
            self.advance_ms(TOOL_LATENCY_MS["charge_deposit"])
            try:
                self._gateway_charge(reservation_id)
            except GatewayUnavailable as exc:
                if attempt == GATEWAY_ATTEMPTS:
                    raise HotelError(
                        "service_unavailable",
                        "503 Service Unavailable",
                        transient=True,
                    ) from exc
                on_retry(exc)
                self.advance_ms(GATEWAY_BACKOFF_MS * attempt)
                continue
            break
        self.charges.append(reservation_id)
        return {"reservation_id": reservation_id, "charged_cents": amount_cents, "status": "captured"}

    # -- internals --------------------------------------------------------------

    def _gateway_charge(self, reservation_id: str) -> None:
        if self.gateway_failures > 0:
            self.gateway_failures -= 1
            raise GatewayUnavailable(f"payment gateway: HTTP 503 for {reservation_id}")

    def _free(self, room_type: str, start: dt.date, end: dt.date) -> list[str]:
        taken = {b.room for b in self.bookings if b.check_in < end and start < b.check_out}
        return [room for room in ROOMS[room_type] if room not in taken]

    def _booking(self, reservation_id: str) -> Booking:
        for booking in self.bookings:
            if booking.reservation_id == reservation_id:
                return booking
        raise HotelError("reservation_not_found", f"no reservation {reservation_id}")

    def _new_id(self) -> str:
        self.next_id += 1
        return f"R-{self.next_id - 1}"


def _date(text: str, name: str = "check_in") -> dt.date:
    if not _ISO_DATE.match(text):
        raise HotelError("invalid_date_format", f"{name} '{text}' is not a valid date")
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise HotelError("invalid_date_format", f"{name} '{text}' is not a valid date") from None


def _stay(check_in: str, check_out: str) -> tuple[dt.date, dt.date]:
    start = _date(check_in, "check_in")
    end = _date(check_out, "check_out")
    if end <= start:
        raise HotelError("checkout_before_checkin", "invalid date range")
    return start, end


def _room_type(text: str) -> str:
    if text not in ROOMS:
        raise HotelError("unknown_room_type", f"unknown room type '{text}'")
    return text
