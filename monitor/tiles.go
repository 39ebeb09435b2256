package monitor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// The tlog-tiles layout (https://c2sp.org/tlog-tiles).
const (
	tileWidth = 256
	hashSize  = 32
	// Bounds on what the log may send.
	maxCheckpoint  = 16 << 10
	maxHashTile    = tileWidth * hashSize
	maxEntryBundle = tileWidth * (2 + 1<<16)
	// maxCachedTiles bounds the hash tiles kept for proofs.
	maxCachedTiles = 64
)

// tilePath is the path of tile index n at level, partial width w (0: full),
// e.g. tile/0/x001/234 or tile/entries/x001/234.p/17.
func tilePath(level string, n uint64, w uint64) string {
	s := fmt.Sprintf("%03d", n%1000)
	for n /= 1000; n > 0; n /= 1000 {
		s = fmt.Sprintf("x%03d/%s", n%1000, s)
	}
	p := "tile/" + level + "/" + s
	if w > 0 && w < tileWidth {
		p += ".p/" + strconv.FormatUint(w, 10)
	}
	return p
}

// partialWidth is the width of tile n at level in a tree of size: 256 for a
// full tile, fewer for the right edge.
func partialWidth(level uint, n, size uint64) uint64 {
	nodes := size >> (8 * level)
	if end := (n + 1) * tileWidth; end <= nodes {
		return tileWidth
	}
	return nodes - n*tileWidth
}

// fetcher reads a tlog-tiles log over HTTP, with bounded reads.
type fetcher struct {
	base   *url.URL
	client *http.Client
}

func (f *fetcher) get(ctx context.Context, path string, limit int64) ([]byte, error) {
	u := f.base.JoinPath(path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("GET %s: %w", path, errNotFound)
		}
		return nil, fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("GET %s: more than %d bytes", path, limit)
	}
	return data, nil
}

var errNotFound = errors.New("HTTP 404")

// getTile reads tile n of level at partial width w. A partial tile the log
// no longer serves (it may delete one once the tile is full) is read as
// the full tile: full reports it, and the caller keeps its first w items
// (https://c2sp.org/tlog-tiles).
func (f *fetcher) getTile(ctx context.Context, level string, n, w uint64, limit int64) (data []byte, path string, full bool, err error) {
	path = tilePath(level, n, w)
	data, err = f.get(ctx, path, limit)
	if errors.Is(err, errNotFound) && w < tileWidth {
		full = true
		path = tilePath(level, n, tileWidth)
		data, err = f.get(ctx, path, limit)
	}
	return data, path, full, err
}

// tree reads node hashes of the tree of one size from hash tiles, caching
// a bounded number of tiles.
type tree struct {
	f     *fetcher
	size  uint64
	tiles map[[2]uint64][]byte
	// fetched counts hash tiles read.
	fetched int
}

func newTree(f *fetcher, size uint64) *tree {
	return &tree{f: f, size: size, tiles: map[[2]uint64][]byte{}}
}

// hashTile returns the hashes of tile n at tile level l, as many as the
// tree holds.
func (t *tree) hashTile(ctx context.Context, l uint, n uint64) ([]byte, error) {
	key := [2]uint64{uint64(l), n}
	if h, ok := t.tiles[key]; ok {
		return h, nil
	}
	w := partialWidth(l, n, t.size)
	data, path, full, err := t.f.getTile(ctx, strconv.FormatUint(uint64(l), 10), n, w, maxHashTile)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, checkErr("fetch", -1, ErrFetch, "%w", err)
	}
	if full && len(data) == tileWidth*hashSize {
		data = data[:w*hashSize]
	}
	if uint64(len(data)) != w*hashSize {
		return nil, checkErr("tile hash", -1, ErrTileHash, "hash tile %s has %d bytes, want %d", path, len(data), w*hashSize)
	}
	if len(t.tiles) >= maxCachedTiles {
		clear(t.tiles)
	}
	t.tiles[key] = data
	t.fetched++
	return data, nil
}

// node returns the hash of a complete node of the tree from its tile.
func (t *tree) node(ctx context.Context, id compact.NodeID) ([]byte, error) {
	tl, k := id.Level/8, id.Level%8
	first := id.Index << k
	tile, err := t.hashTile(ctx, tl, first/tileWidth)
	if err != nil {
		return nil, err
	}
	lo, hi := (first%tileWidth)*hashSize, (first%tileWidth+1<<k)*hashSize
	if hi > uint64(len(tile)) {
		return nil, checkErr("tile hash", -1, ErrTileHash, "node %d/%d is not in its tile", id.Level, id.Index)
	}
	if k == 0 {
		return tile[lo:hi], nil
	}
	r := rangeFactory.NewEmptyRange(0)
	for p := lo; p < hi; p += hashSize {
		if err := r.Append(tile[p:p+hashSize], nil); err != nil {
			return nil, err
		}
	}
	return r.GetRootHash(nil)
}

// nodes returns the hashes of ids.
func (t *tree) nodes(ctx context.Context, ids []compact.NodeID) ([][]byte, error) {
	out := make([][]byte, 0, len(ids))
	for _, id := range ids {
		h, err := t.node(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// consistencyProof is the RFC 6962 consistency proof from the tree of size
// smaller to t's, built from t's tiles.
func (t *tree) consistencyProof(ctx context.Context, smaller uint64) ([][]byte, error) {
	nodes, err := proof.Consistency(smaller, t.size)
	if err != nil {
		return nil, err
	}
	hashes, err := t.nodes(ctx, nodes.IDs)
	if err != nil {
		return nil, err
	}
	return nodes.Rehash(hashes, rfc6962.DefaultHasher.HashChildren)
}

// rangeFactory's Hash is a function, not the method value
// rfc6962.DefaultHasher.HashChildren, so that it is static data rather than
// work at start.
var rangeFactory = &compact.RangeFactory{Hash: hashChildren}

func hashChildren(l, r []byte) []byte { return rfc6962.DefaultHasher.HashChildren(l, r) }

// splitBundle splits an entry bundle (tlog-tiles: each entry preceded by
// its big-endian 16-bit length) into its entries, subslices of data.
func splitBundle(data []byte, into [][]byte) ([][]byte, error) {
	out := into[:0]
	for p := 0; p < len(data); {
		if p+2 > len(data) {
			return nil, fmt.Errorf("%d dangling bytes at the end", len(data)-p)
		}
		n := int(binary.BigEndian.Uint16(data[p:]))
		p += 2
		if p+n > len(data) {
			return nil, fmt.Errorf("entry %d says %d bytes, %d are left", len(out), n, len(data)-p)
		}
		out = append(out, data[p:p+n])
		p += n
	}
	return out, nil
}
