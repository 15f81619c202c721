"""One reading per result: a gain and its noise turned into the words every generated sentence uses.

A gain is "clear of" what it is measured against when its band lies wholly above zero, "below" it
when wholly below, and "within the noise of" it otherwise. The band is an interval measured
directly (a bootstrap, the seeds' range) or the gain -/+ `sigmas` times its noise.

    verdict(2.2, interval=(1.3, 3.4))          # 'clear of'
    verdict(3.2, 3.0)                          # 'within the noise of': 2 x 3.0 = 6.0 > 3.2
    r = Reading(2.175, 1.315, 3.38, "90% of bootstrap draws over ten seeds")
    r.phrase("scratch")   # '+2.2 points, clear of scratch (90% of bootstrap draws over ten seeds: +1.3 to +3.4)'
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Sequence

from bertlab.prose import number

CLEAR, WITHIN, BELOW = "clear of", "within the noise of", "below"


def band(
    gain: float, noise: float | None = None, *, sigmas: float = 2.0, interval: tuple[float, float] | None = None
) -> tuple[float, float]:
    """The band a gain is read by: `interval` as given, else gain -/+ sigmas x noise."""
    if (noise is None) == (interval is None):
        raise ValueError("give the gain's noise (a standard error, a spread) or its interval, not both or neither")
    if interval is not None:
        low, high = interval
        if low > high:
            raise ValueError(f"an interval runs from low to high, got ({low}, {high})")
        return float(low), float(high)
    if noise < 0 or sigmas <= 0:
        raise ValueError(f"noise must be >= 0 and sigmas > 0, got noise={noise}, sigmas={sigmas}")
    return gain - sigmas * noise, gain + sigmas * noise


def verdict(
    gain: float, noise: float | None = None, *, sigmas: float = 2.0, interval: tuple[float, float] | None = None
) -> str:
    """ "clear of" when the gain's band (`interval`, or gain -/+ `sigmas` x `noise`) lies wholly above
    zero, "below" when wholly below, else "within the noise of"; an edge that touches zero is noise."""
    low, high = band(gain, noise, sigmas=sigmas, interval=interval)
    return CLEAR if low > 0 else BELOW if high < 0 else WITHIN


def signed(x: float, digits: int = 1) -> str:
    """A difference with its sign, never "-0.0": what rounds to zero is "0.0"."""
    return f"{0.0:.{digits}f}" if round(x, digits) == 0 else f"{x:+.{digits}f}"


@dataclass(frozen=True)
class Reading:
    """A gain (in points) with the band it is read by, and how that band was made, in words
    ("90% of bootstrap draws over ten seeds", "the seeds' range")."""

    gain: float
    low: float
    high: float
    how: str

    def __post_init__(self):
        if self.low > self.high:
            raise ValueError(f"the band runs from low to high, got ({self.low}, {self.high})")

    @classmethod
    def from_noise(cls, gain: float, noise: float, how: str, sigmas: float = 2.0) -> Reading:
        """The band gain -/+ sigmas x noise (a standard error, a rerun's spread)."""
        return cls(gain, *band(gain, noise, sigmas=sigmas), how)

    @classmethod
    def from_seeds(cls, a: Sequence[float], b: Sequence[float], gain: float | None = None) -> Reading:
        """Two arms' seed scores: the band runs from min(a) - max(b) to max(a) - min(b), clear only
        when every seed of one arm beats every seed of the other. `gain`: the medians' difference."""
        if not a or not b:
            raise ValueError("each arm needs at least one seed's score")
        if gain is None:
            gain = median(a) - median(b)
        n = len(a) if len(a) == len(b) else None
        how = f"the {number(n)} seeds' range" if n and n > 1 else "one seed each" if n == 1 else "the seeds' range"
        return cls(gain, min(a) - max(b), max(a) - min(b), how)

    @property
    def words(self) -> str:
        """The verdict: "clear of", "within the noise of" or "below"."""
        return verdict(self.gain, interval=(self.low, self.high))

    @property
    def clear(self) -> bool:
        return self.words == CLEAR

    def band_words(self) -> str:
        """'+1.3 to +3.4'."""
        return f"{signed(self.low)} to {signed(self.high)}"

    def phrase(self, against: str, unit: str = "points") -> str:
        """'+2.2 points, clear of scratch (90% of bootstrap draws over ten seeds: +1.3 to +3.4)'."""
        return f"{signed(self.gain)} {unit}, {self.words} {against} ({self.how}: {self.band_words()})"
