"""The sales a chaos run sends: drawn from the run's seed, so the workload and the check agree on them."""

import random

PRODUCTS = ("tea", "coffee", "cocoa", "mate")


def sales(seed, count=30):
    draw = random.Random(seed)
    return [{"sale": f"s-{n}", "sku": draw.choice(PRODUCTS), "qty": draw.randint(1, 5)} for n in range(count)]
