"""Reading a run's counters the way the engine writes them (sim/stats.h).

- A counter that is still 0 at the end of a run is written nowhere: an absent counter reads as 0.
- A per-entity counter (a name component that is a decimal number: `nic.17.C_CNTR_LPE_PUT_CMDS`,
  `fabric.sw.3.port.5.tc.0.tx_bytes`) is not listed in metrics.json; its family (numbers replaced by `*`) is
  summarised in `stats.counter_families` (members, nonzero, sum, min, max, max_at), and its own value is
  in telemetry.csv.

`counters(metrics)` reads metrics.json, `telemetry_counters(rundir)` reads telemetry.csv; both give a
`Counters` in which an absent name is 0.  Asking metrics.json for one member of a family it summarises is
an error naming telemetry.csv, never a silent 0.
"""
import csv
import os
import re

_NUMBER = re.compile(r"(?<![^.])[0-9]+(?![^.])")


def family_of(name):
    """`nic.17.C_CNTR_X` -> `nic.*.C_CNTR_X`: every dot-separated component that is a number becomes `*`."""
    return _NUMBER.sub("*", name)


def is_per_entity(name):
    return family_of(name) != name


class SummarisedCounter(LookupError):
    """One member of a per-entity family asked of metrics.json, which only has the family's summary."""


class Counters:
    """Final counter values; an absent name reads as 0.

    `families` (from metrics.json) are the per-entity families with a nonzero member: their members'
    values are not here, so asking for one raises SummarisedCounter instead of answering 0."""

    def __init__(self, values, families=None, source="metrics.json"):
        self._values = dict(values)
        self._families = dict(families or {})
        self._source = source

    def __getitem__(self, name):
        if name in self._values:
            return self._values[name]
        fam = family_of(name)
        if fam != name and fam in self._families:
            raise SummarisedCounter(
                f"{name}: {self._source} summarises the per-entity family {fam} (sum "
                f"{self._families[fam]['sum']}); read the member from telemetry.csv "
                f"(cxisim.counters.telemetry_counters(rundir))")
        return 0

    def get(self, name, default=0):
        """Like [name], but `default` for an absent name."""
        v = self[name]
        return v if name in self._values else default

    def __contains__(self, name):
        """Whether the counter was written, i.e. is nonzero (a summarised member: see __getitem__)."""
        return name in self._values

    def items(self):
        """The written (nonzero) counters; summarised families contribute their sums under their family name."""
        out = dict(self._values)
        out.update({k: f["sum"] for k, f in self._families.items()})
        return sorted(out.items())

    def family(self, pattern):
        """metrics.json's summary of a per-entity family (`nic.*.X`): members, nonzero, sum, min, max, max_at;
        zeros (max_at None) when no member was nonzero."""
        if self._source != "metrics.json":
            raise ValueError("family summaries are in metrics.json (cxisim.counters.counters(metrics))")
        zero = {"members": 0, "nonzero": 0, "sum": 0, "min": 0, "max": 0, "max_at": None}
        return dict(self._families.get(pattern, zero))

    def total(self, part):
        """Sum of every counter whose name (or whose family's name) contains `part`."""
        return sum(v for k, v in self.items() if part in k)


def counters(metrics):
    """The counters of a loaded metrics.json (a dict)."""
    st = metrics.get("stats", {})
    return Counters(st.get("counters", {}), st.get("counter_families", {}), "metrics.json")


def telemetry_counters(rundir):
    """Every written counter of a run directory, per entity, from telemetry.csv."""
    values = {}
    with open(os.path.join(rundir, "telemetry.csv"), encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if row["kind"] == "counter":
                values[row["name"]] = int(row["value"])
    return Counters(values, source="telemetry.csv")
