"""The claims view on disk: one folder per extractor version, so versions live side by side.

    <home>/claims/extractor=rules-0.1.0/claims.parquet
                                       /rejections.parquet
                                       /_watermark.json
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from claims.extract import ExtractionResult, Extractor
from claims.model import CLAIM_SCHEMA, REJECTION_SCHEMA
from memc.atomic import write_parquet
from memc.watermark import write_watermark


def extractor_dir(claims_root: Path, extractor_key: str) -> Path:
    return claims_root / f"extractor={extractor_key}"


def write_extraction(claims_root: Path, extractor: Extractor, result: ExtractionResult, watermark: int) -> Path:
    d = extractor_dir(claims_root, extractor.key)
    write_parquet(result.claims, d / "claims.parquet")
    write_parquet(result.rejections, d / "rejections.parquet")
    write_watermark(
        d,
        "claims",
        watermark,
        extractor=extractor.name,
        extractor_version=extractor.version,
        claims=result.claims.num_rows,
        rejections=result.rejections.num_rows,
    )
    return d


def read_claims(claims_root: Path, extractor_key: str, *, rejected: bool = False) -> pa.Table:
    path = extractor_dir(claims_root, extractor_key) / ("rejections.parquet" if rejected else "claims.parquet")
    if not path.exists():
        return (REJECTION_SCHEMA if rejected else CLAIM_SCHEMA).empty_table()
    return pq.read_table(path)


def extractor_keys(claims_root: Path) -> list[str]:
    if not claims_root.exists():
        return []
    return sorted(p.name.split("=", 1)[1] for p in claims_root.glob("extractor=*") if p.is_dir())
