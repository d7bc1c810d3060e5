import random
from typing import Literal

from spade_env import ToolEnv


class WarehouseStockEnv(ToolEnv):
    """Inventory lookup: total retail value of one product across a region's warehouses.

    A catalogue of products (SKU, name, price) is spread over warehouses in three
    regions. The agent must find the product's SKU by name, list the warehouses of
    the asked region, read the stock in each, get the unit price and combine them.
    Tools: search_products, list_warehouses, get_stock, get_price (and an unneeded
    get_supplier). Answer with <answer>N</answer>."""

    max_turns = 12

    ADJ = ["steel", "oak", "linen", "copper", "glass", "wool", "cedar", "matte"]
    NOUNS = ["stool", "shelf", "lamp", "basket", "kettle", "frame", "tray", "clock"]
    REGIONS = ["north", "south", "west"]

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        names = rng.sample([f"{a} {n}" for a in self.ADJ for n in self.NOUNS], 12)
        self.products = {f"SKU-{rng.randint(1000, 9999)}{chr(65 + i)}": name
                         for i, name in enumerate(names)}
        self.prices = {sku: rng.randint(5, 60) for sku in self.products}
        self.suppliers = {sku: rng.choice(["Acme", "Borealis", "Cobalt"]) for sku in self.products}
        codes = rng.sample(range(10, 99), 7)
        self.warehouses = {}
        for i, code in enumerate(codes):
            self.warehouses[f"WH{code}"] = self.REGIONS[i % 3]
        self.stock = {(sku, wh): rng.randint(0, 40) for sku in self.products for wh in self.warehouses}
        self.sku = rng.choice(sorted(self.products))
        self.region = rng.choice(self.REGIONS)
        self.region_whs = sorted(w for w, r in self.warehouses.items() if r == self.region)
        units = sum(self.stock[(self.sku, w)] for w in self.region_whs)
        self.expected_answer = units * self.prices[self.sku]
        obs = (f"What is the total retail value, in dollars, of all units of the product "
               f"'{self.products[self.sku]}' held in the warehouses of the {self.region} region? "
               "(value = units x unit price)\n" + self.describe_tools()
               + "\nAnswer with <answer>N</answer>, N a whole number of dollars.")
        return obs, {}

    def tool_search_products(self, query: str) -> list:
        """Find products whose name contains the query text.

        Args:
            query: part of a product name, e.g. 'lamp'
        """
        q = query.strip().lower()
        return [{"sku": s, "name": n} for s, n in sorted(self.products.items()) if q and q in n]

    def tool_list_warehouses(self, region: Literal["north", "south", "west"]) -> list:
        """List the warehouse codes in a region.

        Args:
            region: one of north, south, west
        """
        if region not in self.REGIONS:
            raise ValueError(f"unknown region {region!r}")
        return sorted(w for w, r in self.warehouses.items() if r == region)

    def tool_get_stock(self, sku: str, warehouse: str) -> str:
        """Units of a product held in one warehouse.

        Args:
            sku: product SKU, e.g. SKU-1234A
            warehouse: warehouse code, e.g. WH42
        """
        if (sku, warehouse) not in self.stock:
            raise ValueError("unknown sku or warehouse")
        return f"{self.stock[(sku, warehouse)]} units of {sku} in {warehouse}"

    def tool_get_price(self, sku: str) -> str:
        """Unit retail price of a product in dollars.

        Args:
            sku: product SKU
        """
        if sku not in self.prices:
            raise ValueError(f"unknown sku {sku!r}")
        return f"${self.prices[sku]} per unit"

    def tool_get_supplier(self, sku: str) -> str:
        """The supplier of a product.

        Args:
            sku: product SKU
        """
        if sku not in self.suppliers:
            raise ValueError(f"unknown sku {sku!r}")
        return self.suppliers[sku]

    def hint(self):
        return ("Search by the product's name to get its SKU, list only the asked region's "
                "warehouses, query stock in each of them, then multiply the unit sum by the price.")

    def solution(self):
        calls = [{"name": "search_products", "arguments": {"query": self.products[self.sku]}},
                 {"name": "list_warehouses", "arguments": {"region": self.region}}]
        calls += [{"name": "get_stock", "arguments": {"sku": self.sku, "warehouse": w}}
                  for w in self.region_whs]
        calls.append({"name": "get_price", "arguments": {"sku": self.sku}})
        return calls + [str(self.expected_answer)]
