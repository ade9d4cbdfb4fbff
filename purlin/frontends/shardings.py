"""Where each device's part of a global tensor lies, as JAX's modules say it:
Shardy's `#sdy.sharding<@mesh, [..]>` along a manual computation's manual
axes, and GSPMD's `mhlo.sharding` strings (`{devices=[2,1,4]<=[8]
last_tile_dim_replicate}`, `{replicated}`, ...). A layout is, per device (by
rank), the box of the global tensor it holds; `split` cuts a global array
into them, `assemble` puts one back together (the lowest device holding a
box gives it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

import numpy as np

from purlin.frontends import sdy


class ShardingError(ValueError):
    """A sharding purlin cannot read or that does not fit its tensor."""


Box = tuple[slice, ...]


@dataclass(frozen=True)
class Layout:
    """The box each device (by rank) holds of a global tensor of `shape`."""

    shape: tuple[int, ...]
    boxes: tuple[Box, ...]

    def local_shape(self, rank: int) -> tuple[int, ...]:
        return tuple(s.stop - s.start for s in self.boxes[rank])

    def split(self, value: np.ndarray) -> list[np.ndarray]:
        return [value[box].copy() for box in self.boxes]

    def assemble(self, parts: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray:
        out = np.zeros(self.shape, dtype)
        done = np.zeros(self.shape, bool)
        for box, part in zip(self.boxes, parts):
            if part.shape != tuple(s.stop - s.start for s in box):
                raise ShardingError(f"a device's part {list(part.shape)} does not fit its box of the global "
                                    f"{list(self.shape)}")
            fresh = ~done[box]
            out[box] = np.where(fresh, part, out[box])
            done[box] = True
        if not done.all():
            raise ShardingError(f"the devices' parts do not cover the global {list(self.shape)}")
        return out


def _boxes(shape: Sequence[int], index: Sequence[Sequence[int]], tiles: Sequence[int]) -> tuple[Box, ...]:
    """Each device's box when dimension k is cut in tiles[k] blocks and the
    device holds block index[device][k]."""
    boxes = []
    for where in index:
        box = []
        for n, t, i in zip(shape, tiles, where):
            if n % t:
                raise ShardingError(f"dimension of size {n} does not divide into {t} parts")
            box.append(slice(i * (n // t), (i + 1) * (n // t)))
        boxes.append(tuple(box))
    return tuple(boxes)


# -- Shardy ------------------------------------------------------------------


def mesh_coordinates(mesh: sdy.MeshAttr) -> dict[int, dict[str, int]]:
    """Each device's coordinate along each axis of the mesh."""
    names = [a.axis.data for a in mesh.axes.data]
    sizes = [a.size.data for a in mesh.axes.data]
    ids = [i.data for i in mesh.device_ids.data] or list(range(prod(sizes)))
    coords = {}
    for position, device in enumerate(ids):
        at, rest = {}, position
        for name, n in reversed(list(zip(names, sizes))):
            at[name] = rest % n
            rest //= n
        coords[device] = at
    return coords


def sdy_layout(sharding: sdy.TensorShardingAttr, mesh: sdy.MeshAttr, manual: Sequence[str],
               shape: Sequence[int]) -> Layout:
    """The boxes of a tensor of global `shape` split by `sharding` along the
    `manual` axes (the others leave each device the whole dimension)."""
    sizes = mesh.shape
    dims = sharding.dims.data
    if len(dims) != len(shape):
        raise ShardingError(f"the sharding names {len(dims)} dimensions, the tensor has {len(shape)}")
    if sharding.unreduced.data:
        raise ShardingError("unreduced axes (partial sums) are not supported")
    coords = mesh_coordinates(mesh)
    tiles, index = [1] * len(shape), [[0] * len(shape) for _ in coords]
    devices = sorted(coords)
    for k, dim in enumerate(dims):
        for ref in dim.axes.data:
            name = ref.axis.data
            if name not in sizes:
                raise ShardingError(f"axis '{name}' is not an axis of the mesh ({', '.join(sizes)})")
            if name not in manual:
                continue
            n = sizes[name]
            pre, size = (ref.pre.data, ref.size.data) if ref.pre.data else (1, n)
            if n % (pre * size):
                raise ShardingError(f"sub-axis ({pre}){size} does not divide axis '{name}' of size {n}")
            tiles[k] *= size
            for d, device in enumerate(devices):
                sub = coords[device][name] // (n // (pre * size)) % size
                index[d][k] = index[d][k] * size + sub
    return Layout(tuple(shape), _boxes(shape, index, tiles))


# -- GSPMD -------------------------------------------------------------------

_TILED = re.compile(r"devices=\[([\d,]+)\]\s*(?:<=\[([\d,]+)\](?:T\(([\d,]+)\))?|([\d,\s]+?))"
                    r"(\s+last_tile_dim_replicate)?(?:\s+last_tile_dims=\{([a-z_,\s]+)\})?\s*(?:metadata=.*)?$")


def hlo_layout(text: str, shape: Sequence[int], world: int) -> Layout:
    """The boxes of a tensor of global `shape` by the HLO sharding `text`
    (`{replicated}`, `{manual}` or `{devices=[..]..}`) over `world` devices."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ShardingError(f"expected an HLO sharding {{..}}, got '{text}'")
    body = body[1:-1].strip()
    whole = tuple(slice(0, n) for n in shape)
    if re.fullmatch(r"(replicated|manual)(\s+metadata=.*)?", body):
        return Layout(tuple(shape), (whole,) * world)
    if body.startswith("maximal"):
        raise ShardingError(f"HLO sharding '{text}' puts the tensor on one device; purlin reads tiled and "
                            "replicated shardings")
    m = _TILED.fullmatch(body)
    if m is None:
        raise ShardingError(f"HLO sharding '{text}' is not one purlin reads")
    tile_shape = [int(v) for v in m.group(1).split(",")]
    if m.group(2):
        iota = [int(v) for v in m.group(2).split(",")]
        devices = np.arange(prod(iota)).reshape(iota)
        if m.group(3):
            devices = devices.transpose([int(v) for v in m.group(3).split(",")])
    else:
        devices = np.array([int(v) for v in m.group(4).replace(" ", "").split(",") if v])
    if devices.size != prod(tile_shape):
        raise ShardingError(f"HLO sharding '{text}': {devices.size} devices for a tile shape of {prod(tile_shape)}")
    devices = devices.reshape(tile_shape)
    subgroups = (1 if m.group(5) else 0) + (len(m.group(6).split(",")) if m.group(6) else 0)
    rank = len(tile_shape) - subgroups
    if rank != len(shape):
        raise ShardingError(f"HLO sharding '{text}' tiles {rank} dimensions, the tensor has {len(shape)}")
    if devices.size != world or sorted(devices.reshape(-1).tolist()) != list(range(world)):
        raise ShardingError(f"HLO sharding '{text}' does not place each of the {world} devices once")
    index: list[list[int]] = [[0] * rank for _ in range(world)]
    for where in np.ndindex(*tile_shape):
        index[int(devices[where])] = list(where[:rank])
    return Layout(tuple(shape), _boxes(shape, index, tile_shape[:rank]))
