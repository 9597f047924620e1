package server

import "github.com/drover-project/drover/internal/structs"

// paginate cuts one page out of an already-ordered list: it starts at the
// item whose token equals opts.NextToken (the start when empty), skips the
// items keep refuses (a nil keep refuses none) and takes opts.PerPage kept
// items (all when 0). It returns the page and the token of the next kept
// item ("" on the last page).
//
// The token is looked up among all items, kept or not, so a page still
// follows on from its place when the item that began it has stopped matching
// a filter since the previous page. keep is called only from that place up
// to the first item of the next page, and its first error is returned.
func paginate[T any](items []T, opts *structs.QueryOptions, token func(T) string, keep func(T) (bool, error)) ([]T, string, error) {
	start := 0
	if opts.NextToken != "" {
		start = len(items)
		for i, it := range items {
			if token(it) == opts.NextToken {
				start = i
				break
			}
		}
	}
	items = items[start:]
	if keep == nil {
		if opts.PerPage <= 0 || int(opts.PerPage) >= len(items) {
			return items, "", nil
		}
		return items[:opts.PerPage], token(items[opts.PerPage]), nil
	}
	page := make([]T, 0, min(len(items), max(int(opts.PerPage), 0)))
	for _, it := range items {
		ok, err := keep(it)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			continue
		}
		if opts.PerPage > 0 && len(page) == int(opts.PerPage) {
			return page, token(it), nil
		}
		page = append(page, it)
	}
	return page, "", nil
}
