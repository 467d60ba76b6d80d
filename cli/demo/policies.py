"""What the scripted model does for each kind of user request.

Each function returns a policy (see ``model``): a generator that reads the
real tool results. Where a real model's behaviour depends on what the tool
result says, so does the policy's: with a corrective ``hint`` it applies the
fix; with a bare error it guesses, retries unchanged or gives up, the way the
seed write-up describes blind mode.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Generator, Sequence

from loopscope.cli.demo.model import Move, Moves, Policy, ToolResult

Script = Generator[Move, list[ToolResult], None]


def answer(text: str) -> Policy:
    """A question the model answers without tools."""

    def policy(m: Moves) -> Script:
        yield m.say(text)

    return policy


def book(check_in: str, check_out: str, room_type: str, guest: str) -> Policy:
    """The happy path: check availability, book the first free room."""

    def policy(m: Moves) -> Script:
        [r] = yield [m.call("check_availability", check_in=check_in, check_out=check_out, room_type=room_type)]
        room = r.data["rooms"][0]
        yield [m.call("create_reservation", guest_name=guest, room=room, check_in=check_in, check_out=check_out)]
        yield m.say(f"Booked {room} for {guest}, {check_in} to {check_out}.")

    return policy


def book_natural_date(
    said: str, iso: str, check_out: str, room_type: str, guest: str, blind_guesses: Sequence[str]
) -> Policy:
    """The guest gave a natural-language check-in date; the model passes it on verbatim first.

    With the corrective hint the model converts the date to ``iso``. Without
    it, it tries ``blind_guesses`` in turn and gives up when they run out.
    """
    return _book_after_fixing(
        "check_in",
        said,
        iso,
        blind_guesses,
        {"check_in": said, "check_out": check_out, "room_type": room_type},
        guest,
        "Sorry, I could not check that date. Could you give me the exact check-in date?",
        lambda room, check_in: f"Booked {room} for {guest} from {check_in}.",
    )


def book_room_wording(
    said: str, meant: str, check_in: str, check_out: str, guest: str, blind_guesses: Sequence[str]
) -> Policy:
    """The guest asked for a room type the hotel does not sell under that name (same fixing as above)."""
    return _book_after_fixing(
        "room_type",
        said,
        meant,
        blind_guesses,
        {"check_in": check_in, "check_out": check_out, "room_type": said},
        guest,
        "Sorry, I could not find that kind of room.",
        lambda room, room_type: f"Booked {room} ({room_type}) for {guest}.",
    )


def _book_after_fixing(
    name: str,
    said: str,
    meant: str,
    blind_guesses: Sequence[str],
    args: dict[str, str],
    guest: str,
    give_up: str,
    booked: Callable[[str, str], str],
) -> Policy:
    """Check availability with the guest's wording of argument ``name``, fix it, then book.

    A rejected value is replaced by ``meant`` when the error carries a hint, else by the next of
    ``blind_guesses``; when those run out the model says ``give_up`` and ends its turn.
    """

    def policy(m: Moves) -> Script:
        guesses = iter(blind_guesses)
        value: str | None = said
        while True:
            call = {**args, name: value}  # key order kept: it is the recorded input_shape's order
            [r] = yield [m.call("check_availability", **call)]
            if not r.is_error:
                break
            value = meant if r.hint else next(guesses, None)
            if value is None:
                yield m.say(give_up)
                return
        room = r.data["rooms"][0]
        check_in, check_out = call["check_in"], call["check_out"]
        yield [m.call("create_reservation", guest_name=guest, room=room, check_in=check_in, check_out=check_out)]
        yield m.say(booked(room, value))

    return policy


def book_lost_race(check_in: str, check_out: str, room_type: str, guest: str, blind_tries: int = 3) -> Policy:
    """The room the model picked is taken before it books it.

    The corrective hint sends the model back to ``check_availability`` (a
    different tool); a bare ``conflict`` makes it retry the same booking
    unchanged until it has tried ``blind_tries`` times: a spin.
    """

    def policy(m: Moves) -> Script:
        [r] = yield [m.call("check_availability", check_in=check_in, check_out=check_out, room_type=room_type)]
        room = r.data["rooms"][0]
        for _ in range(blind_tries):
            [r] = yield [m.call("create_reservation", guest_name=guest, room=room, check_in=check_in, check_out=check_out)]
            if not r.is_error:
                yield m.say(f"Booked {room} for {guest}.")
                return
            if r.hint:
                [r] = yield [m.call("check_availability", check_in=check_in, check_out=check_out, room_type=room_type)]
                room = r.data["rooms"][0]
        yield m.say("I'm sorry, something went wrong with the booking. Please try again later.")

    return policy


def book_without_name(check_in: str, check_out: str, room_type: str, invented_name: str) -> Policy:
    """The guest did not say who the room is for.

    Told "ask the guest; never invent it", the model asks and ends its turn.
    Told only "missing field", it fills in a made-up name and books.
    """

    def policy(m: Moves) -> Script:
        [r] = yield [m.call("check_availability", check_in=check_in, check_out=check_out, room_type=room_type)]
        room = r.data["rooms"][0]
        [r] = yield [m.call("create_reservation", guest_name="", room=room, check_in=check_in, check_out=check_out)]
        if r.hint:
            yield m.say(f"{room} is free. May I have the guest's full name to book it?")
            return
        yield [m.call("create_reservation", guest_name=invented_name, room=room, check_in=check_in, check_out=check_out)]
        yield m.say(f"Booked {room} under '{invented_name}'.")

    return policy


def book_named(room: str, check_in: str, check_out: str, guest: str) -> Policy:
    """The follow-up prompt that supplies the name the model asked for."""

    def policy(m: Moves) -> Script:
        yield [m.call("create_reservation", guest_name=guest, room=room, check_in=check_in, check_out=check_out)]
        yield m.say(f"Booked {room} for {guest}.")

    return policy


def book_sold_out(check_in: str, check_out: str, wanted: str, alternative: str) -> Policy:
    """The wanted room type is sold out for the dates.

    The hint says "try a different room_type", so the model checks
    ``alternative`` and offers it; a bare "no rooms" gets one unchanged retry
    and an apology.
    """

    def policy(m: Moves) -> Script:
        [r] = yield [m.call("check_availability", check_in=check_in, check_out=check_out, room_type=wanted)]
        if r.hint:
            [r] = yield [m.call("check_availability", check_in=check_in, check_out=check_out, room_type=alternative)]
            yield m.say(f"The {wanted} is taken, but {r.data['rooms'][0]} ({alternative}) is free. Shall I book it?")
            return
        [r] = yield [m.call("check_availability", check_in=check_in, check_out=check_out, room_type=wanted)]
        yield m.say("Sorry, there is no availability for those dates.")

    return policy


def book_reversed_dates(check_in: str, check_out: str, room_type: str, guest: str) -> Policy:
    """The guest gave the dates the wrong way round; either message is enough to swap them."""

    def policy(m: Moves) -> Script:
        [r] = yield [m.call("check_availability", check_in=check_in, check_out=check_out, room_type=room_type)]
        start, end = (check_out, check_in) if r.is_error else (check_in, check_out)
        if r.is_error:
            [r] = yield [m.call("check_availability", check_in=start, check_out=end, room_type=room_type)]
        room = r.data["rooms"][0]
        yield [m.call("create_reservation", guest_name=guest, room=room, check_in=start, check_out=end)]
        yield m.say(f"Booked {room} for {guest}, {start} to {end}.")

    return policy


def compare_prices(check_in: str, check_out: str, room_types: Sequence[str]) -> Policy:
    """Parallel tool use: one response asks for every room type at once."""

    def policy(m: Moves) -> Script:
        calls = [m.call("check_availability", check_in=check_in, check_out=check_out, room_type=t) for t in room_types]
        results = yield calls
        rates = ", ".join(f"{t}: {r.data['nightly_rate_cents'] / 100:.0f} EUR" for t, r in zip(room_types, results))
        yield m.say(f"Nightly rates: {rates}.")

    return policy


def survey_weekends(fridays: Sequence[str], room_type: str, per_step: int) -> Policy:
    """An over-eager model that checks every weekend, ``per_step`` in parallel, until stopped."""

    def policy(m: Moves) -> Script:
        for i in range(0, len(fridays), per_step):
            batch = fridays[i : i + per_step]
            yield [m.call("check_availability", check_in=d, check_out=_plus_two_days(d), room_type=room_type) for d in batch]
        yield m.say("Every weekend is available.")

    return policy


def confirm_arrivals(date: str) -> Policy:
    """Back office: confirm tomorrow's arrivals, all confirmations in one parallel step."""

    def policy(m: Moves) -> Script:
        [r] = yield [m.call("list_arrivals", date=date)]
        ids = r.data["reservation_ids"]
        yield [m.call("send_confirmation", reservation_id=i) for i in ids]
        yield m.say(f"Confirmed {len(ids)} arrivals for {date}.")

    return policy


def take_deposit(reservation_id: str, amount_cents: int, confirm: bool) -> Policy:
    """Back office: charge a deposit; after a failed charge, try once more next step."""

    def policy(m: Moves) -> Script:
        [r] = yield [m.call("charge_deposit", reservation_id=reservation_id, amount_cents=amount_cents)]
        if r.is_error:
            [r] = yield [m.call("charge_deposit", reservation_id=reservation_id, amount_cents=amount_cents)]
        if confirm and not r.is_error:
            yield [m.call("send_confirmation", reservation_id=reservation_id)]
        yield m.say(f"Deposit for {reservation_id}: {'failed' if r.is_error else 'captured'}.")

    return policy


def send_confirmations(reservation_ids: Sequence[str]) -> Policy:
    """Back office: send several confirmations in one parallel step."""

    def policy(m: Moves) -> Script:
        yield [m.call("send_confirmation", reservation_id=i) for i in reservation_ids]
        yield m.say(f"Sent {len(reservation_ids)} confirmations.")

    return policy


def _plus_two_days(iso: str) -> str:
    return (dt.date.fromisoformat(iso) + dt.timedelta(days=2)).isoformat()
