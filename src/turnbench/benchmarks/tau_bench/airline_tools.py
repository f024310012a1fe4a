"""The airline domain's tools, written for turnbench from their behaviour upstream.

As for retail (`retail_tools`): functions of a conversation's `DatabaseState` and the call's
arguments, whose observations are upstream's to the byte, upstream's own quirks included,
since the gold states were made with them: a change of flights keeps the reservation's
old cabin, booking and changing flights never update the seats left, a gift card is
charged without rounding, a one-stop search reads the second flight's seats and prices on
the first flight's date (an error when that flight has no such date), and the next day of a
one-stop connection is written without a leading zero. Checked against every gold action of
the 50 airline tasks (tests/unit/test_tau_tools.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from turnbench.benchmarks.tau_bench.calculator import calculate
from turnbench.benchmarks.tau_bench.database import DatabaseState, copy_json
from turnbench.benchmarks.tau_bench.retail_tools import think, transfer_to_human_agents

#: the reservation ids a booking takes, in order (upstream assumes at most three a task)
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
#: the certificate ids `send_certificate` gives, in order (at most three a task)
NEW_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
#: the booking's creation time: the policy's "now"
BOOKED_AT = "2024-05-15T15:00:00"
INSURANCE_PER_PASSENGER = 30
PER_NONFREE_BAG = 50
AIRPORTS = {
    "SFO": "San Francisco", "JFK": "New York", "LAX": "Los Angeles", "ORD": "Chicago",
    "DFW": "Dallas", "DEN": "Denver", "SEA": "Seattle", "ATL": "Atlanta", "MIA": "Miami",
    "BOS": "Boston", "PHX": "Phoenix", "IAH": "Houston", "LAS": "Las Vegas",
    "MCO": "Orlando", "EWR": "Newark", "CLT": "Charlotte", "MSP": "Minneapolis",
    "DTW": "Detroit", "PHL": "Philadelphia", "LGA": "LaGuardia",
}  # fmt: skip


def _calculate(db: DatabaseState, expression: str) -> str:
    return calculate(expression)


def _priced(db: DatabaseState, flight: dict[str, Any], cabin: str, seats: int) -> str | None:
    """Price one flight of a booking or change (its price and airports set on `flight`),
    or say why it cannot be booked."""
    number = flight["flight_number"]
    found = db.get("flights", number)
    if found is None:
        return f"Error: flight {number} not found"
    day = found["dates"].get(flight["date"])
    if day is None:
        return f"Error: flight {number} not found on date {flight['date']}"
    if day["status"] != "available":
        return f"Error: flight {number} not available on date {flight['date']}"
    if day["available_seats"][cabin] < seats:
        return f"Error: not enough seats on flight {number}"
    flight["price"] = day["prices"][cabin]
    flight["origin"] = found["origin"]
    flight["destination"] = found["destination"]
    return None


def _book_reservation(
    db: DatabaseState,
    user_id: str,
    origin: str,
    destination: str,
    flight_type: str,
    cabin: str,
    flights: list[dict[str, Any]],
    passengers: list[dict[str, Any]],
    payment_methods: list[dict[str, Any]],
    total_baggages: int,
    nonfree_baggages: int,
    insurance: str,
) -> str:
    user = db.get("users", user_id)
    if user is None:
        return "Error: user not found"
    reservation_id = next(
        (key for key in NEW_RESERVATION_IDS[:-1] if not db.has("reservations", key)),
        NEW_RESERVATION_IDS[-1],
    )
    reservation = {
        "reservation_id": reservation_id,
        "user_id": user_id,
        "origin": origin,
        "destination": destination,
        "flight_type": flight_type,
        "cabin": cabin,
        "flights": copy_json(flights),
        "passengers": passengers,
        "payment_history": payment_methods,
        "created_at": BOOKED_AT,
        "total_baggages": total_baggages,
        "nonfree_baggages": nonfree_baggages,
        "insurance": insurance,
    }
    total = 0
    for flight in reservation["flights"]:
        problem = _priced(db, flight, cabin, len(passengers))
        if problem:
            return problem
        total += flight["price"] * len(passengers)
    if insurance == "yes":
        total += INSURANCE_PER_PASSENGER * len(passengers)
    total += PER_NONFREE_BAG * nonfree_baggages
    methods = user["payment_methods"]
    for payment in payment_methods:
        payment_id, amount = payment["payment_id"], payment["amount"]
        if payment_id not in methods:
            return f"Error: payment method {payment_id} not found"
        stored = methods[payment_id]
        if stored["source"] in ("gift_card", "certificate") and stored["amount"] < amount:
            return f"Error: not enough balance in payment method {payment_id}"
    paid = sum(payment["amount"] for payment in payment_methods)
    if paid != total:
        return f"Error: payment amount does not add up, total price is {total}, but paid {paid}"
    user = db.edit("users", user_id)
    for payment in payment_methods:
        payment_id = payment["payment_id"]
        source = user["payment_methods"][payment_id]["source"]
        if source == "gift_card":
            user["payment_methods"][payment_id]["amount"] -= payment["amount"]
        elif source == "certificate":
            del user["payment_methods"][payment_id]
    db.insert("reservations", reservation_id, reservation)
    user["reservations"].append(reservation_id)
    return json.dumps(reservation)


def _cancel_reservation(db: DatabaseState, reservation_id: str) -> str:
    if not db.has("reservations", reservation_id):
        return "Error: reservation not found"
    reservation = db.edit("reservations", reservation_id)
    refunds = [
        {"payment_id": payment["payment_id"], "amount": -payment["amount"]}
        for payment in reservation["payment_history"]
    ]
    reservation["payment_history"].extend(refunds)
    reservation["status"] = "cancelled"
    return json.dumps(reservation)


def _get_reservation_details(db: DatabaseState, reservation_id: str) -> str:
    reservation = db.get("reservations", reservation_id)
    # (upstream says "user not found" of a reservation: kept, the agent reads the same)
    return json.dumps(reservation) if reservation is not None else "Error: user not found"


def _get_user_details(db: DatabaseState, user_id: str) -> str:
    user = db.get("users", user_id)
    return json.dumps(user) if user is not None else "Error: user not found"


def _list_all_airports(db: DatabaseState) -> str:
    return json.dumps(AIRPORTS)


def _on_day(flight: dict[str, Any], day: dict[str, Any]) -> dict[str, Any]:
    """A flight as a search shows it: its fields but its calendar, and that day's status,
    seats and prices."""
    shown = {key: value for key, value in flight.items() if key != "dates"}
    shown.update(day)
    return shown


def _search_direct_flight(db: DatabaseState, origin: str, destination: str, date: str) -> str:
    found = []
    for flight in db.values("flights"):
        if flight["origin"] == origin and flight["destination"] == destination:
            day = flight["dates"].get(date)
            if day is not None and day["status"] == "available":
                found.append(_on_day(flight, day))
    return json.dumps(found)


def _search_onestop_flight(db: DatabaseState, origin: str, destination: str, date: str) -> str:
    found = []
    flights = list(db.values("flights"))
    for first in flights:
        if first["origin"] != origin:
            continue
        for second in flights:
            if second["destination"] != destination or first["destination"] != second["origin"]:
                continue
            overnight = "+1" in first["scheduled_arrival_time_est"]
            next_date = f"2024-05-{int(date[-2:]) + 1}" if overnight else date
            if first["scheduled_arrival_time_est"] > second["scheduled_departure_time_est"]:
                continue
            if date not in first["dates"] or next_date not in second["dates"]:
                continue
            if (
                first["dates"][date]["status"] != "available"
                or second["dates"][next_date]["status"] != "available"
            ):
                continue
            leg1 = _on_day(first, first["dates"][date])
            leg1["date"] = date
            leg2 = _on_day(second, second["dates"][date])  # (KeyError: as upstream)
            leg2["date"] = next_date
            found.append([leg1, leg2])
    return json.dumps(found)


def _send_certificate(db: DatabaseState, user_id: str, amount: int) -> str:
    user = db.get("users", user_id)
    if user is None:
        return "Error: user not found"
    for payment_id in NEW_CERTIFICATE_IDS:
        if payment_id not in user["payment_methods"]:
            db.edit("users", user_id)["payment_methods"][payment_id] = {
                "source": "certificate",
                "amount": amount,
                "id": payment_id,
            }
            return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
    # (upstream returns nothing here, and its run fails; the agent is told instead)
    return f"Error: user {user_id} already has the most certificates one task can send"


def _update_payment(
    db: DatabaseState, reservation: Any, payment_id: str, price: float
) -> tuple[Any, str | None]:
    """The payment method of a change of `price`, or why it cannot pay."""
    method = db.get("users", reservation["user_id"])["payment_methods"].get(payment_id)
    if method is None:
        return None, "Error: payment method not found"
    if method["source"] == "certificate":
        return None, "Error: certificate cannot be used to update reservation"
    if method["source"] == "gift_card" and method["amount"] < price:
        return None, "Error: gift card balance is not enough"
    return method, None


def _charge(db: DatabaseState, reservation: Any, payment_id: str, price: float) -> None:
    """Take a change's price from a gift card (other methods are charged outside)."""
    methods = db.get("users", reservation["user_id"])["payment_methods"]
    if methods[payment_id]["source"] == "gift_card":
        card = db.edit("users", reservation["user_id"])["payment_methods"][payment_id]
        card["amount"] -= price


def _update_reservation_baggages(
    db: DatabaseState, reservation_id: str, total_baggages: int, nonfree_baggages: int,
    payment_id: str,
) -> str:  # fmt: skip
    reservation = db.get("reservations", reservation_id)
    if reservation is None:
        return "Error: reservation not found"
    price = PER_NONFREE_BAG * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    _, problem = _update_payment(db, reservation, payment_id, price)
    if problem:
        return problem
    reservation = db.edit("reservations", reservation_id)
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    _charge(db, reservation, payment_id, price)
    if price != 0:
        reservation["payment_history"].append({"payment_id": payment_id, "amount": price})
    return json.dumps(reservation)


def _update_reservation_flights(
    db: DatabaseState, reservation_id: str, cabin: str, flights: list[dict[str, Any]],
    payment_id: str,
) -> str:  # fmt: skip
    reservation = db.get("reservations", reservation_id)
    if reservation is None:
        return "Error: reservation not found"
    seats = len(reservation["passengers"])
    total = 0
    flights = copy_json(flights)
    for flight in flights:
        kept = [
            old
            for old in reservation["flights"]
            if old["flight_number"] == flight["flight_number"]
            and old["date"] == flight["date"]
            and cabin == reservation["cabin"]
        ]
        if kept:  # (an unchanged flight keeps the price it was booked at)
            total += kept[0]["price"] * seats
            flight["price"] = kept[0]["price"]
            flight["origin"] = kept[0]["origin"]
            flight["destination"] = kept[0]["destination"]
            continue
        problem = _priced(db, flight, cabin, seats)
        if problem:
            return problem
        total += flight["price"] * seats
    total -= sum(flight["price"] for flight in reservation["flights"]) * seats
    _, problem = _update_payment(db, reservation, payment_id, total)
    if problem:
        return problem
    _charge(db, reservation, payment_id, total)
    reservation = db.edit("reservations", reservation_id)
    reservation["flights"] = flights
    if total != 0:
        reservation["payment_history"].append({"payment_id": payment_id, "amount": total})
    return json.dumps(reservation)


def _update_reservation_passengers(
    db: DatabaseState, reservation_id: str, passengers: list[dict[str, Any]]
) -> str:
    reservation = db.get("reservations", reservation_id)
    if reservation is None:
        return "Error: reservation not found"
    if len(passengers) != len(reservation["passengers"]):
        return "Error: number of passengers does not match"
    reservation = db.edit("reservations", reservation_id)
    reservation["passengers"] = passengers
    return json.dumps(reservation)


#: the airline tools by name, each called as `tool(db, **arguments)`
TOOLS: dict[str, Callable[..., str]] = {
    "book_reservation": _book_reservation,
    "calculate": _calculate,
    "cancel_reservation": _cancel_reservation,
    "get_reservation_details": _get_reservation_details,
    "get_user_details": _get_user_details,
    "list_all_airports": _list_all_airports,
    "search_direct_flight": _search_direct_flight,
    "search_onestop_flight": _search_onestop_flight,
    "send_certificate": _send_certificate,
    "think": think,
    "transfer_to_human_agents": transfer_to_human_agents,
    "update_reservation_baggages": _update_reservation_baggages,
    "update_reservation_flights": _update_reservation_flights,
    "update_reservation_passengers": _update_reservation_passengers,
}
