"""The retail domain's tools, written for turnbench from their behaviour upstream.

Each is a function of a conversation's `DatabaseState` and the call's arguments, returning
the observation the agent is shown. The observations are upstream's to the byte: records as
`json.dumps` writes them (keys in the records' order, a field a tool adds at the end, ASCII
escapes), the same error texts, and the same float arithmetic in the same order (balances
rounded to cents where upstream rounds them, and only there). Every observation of every gold
action of the 635 retail tasks is checked against upstream's own (tests/unit/test_tau_tools.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from turnbench.benchmarks.tau_bench.calculator import calculate
from turnbench.benchmarks.tau_bench.database import DatabaseState

CANCEL_REASONS = ("no longer needed", "ordered by mistake")


def _calculate(db: DatabaseState, expression: str) -> str:
    return calculate(expression)


def _pending(db: DatabaseState, order_id: str, verb: str) -> tuple[Any, str | None]:
    order = db.get("orders", order_id)
    if order is None:
        return None, "Error: order not found"
    if order["status"] != "pending":
        return None, f"Error: non-pending order cannot be {verb}"
    return order, None


def _cancel_pending_order(db: DatabaseState, order_id: str, reason: str) -> str:
    order, error = _pending(db, order_id, "cancelled")
    if error:
        return error
    if reason not in CANCEL_REASONS:
        return "Error: invalid reason"
    order = db.edit("orders", order_id)
    refunds = []
    for payment in order["payment_history"]:
        method = payment["payment_method_id"]
        refunds.append(
            {"transaction_type": "refund", "amount": payment["amount"], "payment_method_id": method}
        )
        if "gift_card" in method:  # (a gift card is refunded at once)
            card = db.edit("users", order["user_id"])["payment_methods"][method]
            card["balance"] = round(card["balance"] + payment["amount"], 2)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    return json.dumps(order)


def _counted(wanted: list[str], items: list[dict[str, Any]]) -> str | None:
    """The first item id asked for more often than the order holds it, if any."""
    held = [item["item_id"] for item in items]
    for item_id in wanted:
        if wanted.count(item_id) > held.count(item_id):
            return item_id
    return None


def _price_difference(
    db: DatabaseState, order: Any, item_ids: list[str], new_item_ids: list[str]
) -> tuple[float, str | None]:
    """The summed price difference of swapping each item for its new one, or an error."""
    difference: float = 0
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
        item = next(item for item in order["items"] if item["item_id"] == item_id)
        variants = db.get("products", item["product_id"])["variants"]
        if not (new_item_id in variants and variants[new_item_id]["available"]):
            return 0, f"Error: new item {new_item_id} not found or available"
        difference += variants[new_item_id]["price"] - item["price"]
    return difference, None


def _payment_method(db: DatabaseState, order: Any, method_id: str) -> Any:
    return db.get("users", order["user_id"])["payment_methods"].get(method_id)


def _exchange_delivered_order_items(
    db: DatabaseState,
    order_id: str,
    item_ids: list[str],
    new_item_ids: list[str],
    payment_method_id: str,
) -> str:
    order = db.get("orders", order_id)
    if order is None:
        return "Error: order not found"
    if order["status"] != "delivered":
        return "Error: non-delivered order cannot be exchanged"
    missing = _counted(item_ids, order["items"])
    if missing is not None:
        return f"Error: {missing} not found"
    if len(item_ids) != len(new_item_ids):
        return "Error: the number of items to be exchanged should match"
    difference, error = _price_difference(db, order, item_ids, new_item_ids)
    if error:
        return error
    difference = round(difference, 2)
    method = _payment_method(db, order, payment_method_id)
    if method is None:
        return "Error: payment method not found"
    if method["source"] == "gift_card" and method["balance"] < difference:
        return "Error: insufficient gift card balance to pay for the price difference"
    order = db.edit("orders", order_id)
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = difference
    return json.dumps(order)


def _find_user_id_by_email(db: DatabaseState, email: str) -> str:
    wanted = email.lower()
    for user_id, profile in db.items("users"):
        if profile["email"].lower() == wanted:
            return user_id
    return "Error: user not found"


def _find_user_id_by_name_zip(db: DatabaseState, first_name: str, last_name: str, zip: str) -> str:
    first, last = first_name.lower(), last_name.lower()
    for user_id, profile in db.items("users"):
        name = profile["name"]
        if (
            name["first_name"].lower() == first
            and name["last_name"].lower() == last
            and profile["address"]["zip"] == zip
        ):
            return user_id
    return "Error: user not found"


def _get_order_details(db: DatabaseState, order_id: str) -> str:
    order = db.get("orders", order_id)
    return json.dumps(order) if order is not None else "Error: order not found"


def _get_product_details(db: DatabaseState, product_id: str) -> str:
    product = db.get("products", product_id)
    return json.dumps(product) if product is not None else "Error: product not found"


def _get_user_details(db: DatabaseState, user_id: str) -> str:
    user = db.get("users", user_id)
    return json.dumps(user) if user is not None else "Error: user not found"


def _list_all_product_types(db: DatabaseState) -> str:
    names = {product["name"]: product["product_id"] for product in db.values("products")}
    return json.dumps(dict(sorted(names.items())))


def _address(address1: str, address2: str, city: str, state: str, country: str, zip: str) -> dict:
    return {
        "address1": address1,
        "address2": address2,
        "city": city,
        "state": state,
        "country": country,
        "zip": zip,
    }


def _modify_pending_order_address(
    db: DatabaseState, order_id: str, address1: str, address2: str, city: str,
    state: str, country: str, zip: str,
) -> str:  # fmt: skip
    _, error = _pending(db, order_id, "modified")
    if error:
        return error
    order = db.edit("orders", order_id)
    order["address"] = _address(address1, address2, city, state, country, zip)
    return json.dumps(order)


def _modify_pending_order_items(
    db: DatabaseState,
    order_id: str,
    item_ids: list[str],
    new_item_ids: list[str],
    payment_method_id: str,
) -> str:
    order, error = _pending(db, order_id, "modified")
    if error:
        return error
    missing = _counted(item_ids, order["items"])
    if missing is not None:
        return f"Error: {missing} not found"
    if len(item_ids) != len(new_item_ids):
        return "Error: the number of items to be exchanged should match"
    difference, error = _price_difference(db, order, item_ids, new_item_ids)
    if error:
        return error
    method = _payment_method(db, order, payment_method_id)
    if method is None:
        return "Error: payment method not found"
    if method["source"] == "gift_card" and method["balance"] < difference:
        return "Error: insufficient gift card balance to pay for the new item"
    order = db.edit("orders", order_id)
    order["payment_history"].append(
        {
            "transaction_type": "payment" if difference > 0 else "refund",
            "amount": abs(difference),
            "payment_method_id": payment_method_id,
        }
    )
    if method["source"] == "gift_card":
        card = db.edit("users", order["user_id"])["payment_methods"][payment_method_id]
        card["balance"] = round(card["balance"] - difference, 2)
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
        item = next(item for item in order["items"] if item["item_id"] == item_id)
        variant = db.get("products", item["product_id"])["variants"][new_item_id]
        item["item_id"] = new_item_id
        item["price"] = variant["price"]
        item["options"] = json.loads(json.dumps(variant["options"]))  # (a copy, not the base's)
    order["status"] = "pending (item modified)"
    return json.dumps(order)


def _modify_pending_order_payment(db: DatabaseState, order_id: str, payment_method_id: str) -> str:
    order, error = _pending(db, order_id, "modified")
    if error:
        return error
    methods = db.get("users", order["user_id"])["payment_methods"]
    if payment_method_id not in methods:
        return "Error: payment method not found"
    history = order["payment_history"]
    if len(history) > 1 or history[0]["transaction_type"] != "payment":
        return "Error: there should be exactly one payment for a pending order"
    old = history[0]["payment_method_id"]
    if old == payment_method_id:
        return "Error: the new payment method should be different from the current one"
    amount = history[0]["amount"]
    if methods[payment_method_id]["source"] == "gift_card" and (
        methods[payment_method_id]["balance"] < amount
    ):
        return "Error: insufficient gift card balance to pay for the order"
    order = db.edit("orders", order_id)
    order["payment_history"].extend(
        [
            {
                "transaction_type": "payment",
                "amount": amount,
                "payment_method_id": payment_method_id,
            },
            {"transaction_type": "refund", "amount": amount, "payment_method_id": old},
        ]
    )
    user_methods = None
    if methods[payment_method_id]["source"] == "gift_card":
        user_methods = db.edit("users", order["user_id"])["payment_methods"]
        card = user_methods[payment_method_id]
        card["balance"] = round(card["balance"] - amount, 2)
    if "gift_card" in old:
        user_methods = user_methods or db.edit("users", order["user_id"])["payment_methods"]
        card = user_methods[old]
        card["balance"] = round(card["balance"] + amount, 2)
    return json.dumps(order)


def _modify_user_address(
    db: DatabaseState, user_id: str, address1: str, address2: str, city: str,
    state: str, country: str, zip: str,
) -> str:  # fmt: skip
    if not db.has("users", user_id):
        return "Error: user not found"
    user = db.edit("users", user_id)
    user["address"] = _address(address1, address2, city, state, country, zip)
    return json.dumps(user)


def _return_delivered_order_items(
    db: DatabaseState, order_id: str, item_ids: list[str], payment_method_id: str
) -> str:
    order = db.get("orders", order_id)
    if order is None:
        return "Error: order not found"
    if order["status"] != "delivered":
        return "Error: non-delivered order cannot be returned"
    if _payment_method(db, order, payment_method_id) is None:
        return "Error: payment method not found"
    original = order["payment_history"][0]["payment_method_id"]
    if "gift_card" not in payment_method_id and payment_method_id != original:
        return "Error: payment method should be either the original payment method or a gift card"
    if _counted(item_ids, order["items"]) is not None:
        return "Error: some item not found"
    order = db.edit("orders", order_id)
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return json.dumps(order)


def think(db: DatabaseState, thought: str) -> str:
    """Nothing happens; the agent's thought is only logged."""
    return ""


def transfer_to_human_agents(db: DatabaseState, summary: str) -> str:
    """The conversation is handed to a human (a terminating tool)."""
    return "Transfer successful"


#: the retail tools by name, each called as `tool(db, **arguments)`
TOOLS: dict[str, Callable[..., str]] = {
    "calculate": _calculate,
    "cancel_pending_order": _cancel_pending_order,
    "exchange_delivered_order_items": _exchange_delivered_order_items,
    "find_user_id_by_email": _find_user_id_by_email,
    "find_user_id_by_name_zip": _find_user_id_by_name_zip,
    "get_order_details": _get_order_details,
    "get_product_details": _get_product_details,
    "get_user_details": _get_user_details,
    "list_all_product_types": _list_all_product_types,
    "modify_pending_order_address": _modify_pending_order_address,
    "modify_pending_order_items": _modify_pending_order_items,
    "modify_pending_order_payment": _modify_pending_order_payment,
    "modify_user_address": _modify_user_address,
    "return_delivered_order_items": _return_delivered_order_items,
    "think": think,
    "transfer_to_human_agents": transfer_to_human_agents,
}
