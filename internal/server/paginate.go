package server

import "github.com/drover-project/drover/internal/structs"

// paginate cuts one page out of an already-ordered list: it starts at the
// item whose token equals opts.NextToken (the start when empty) and takes
// opts.PerPage items (all when 0). It returns the page and the token of the
// first item of the next page ("" on the last page).
func paginate[T any](items []T, opts *structs.QueryOptions, token func(T) string) ([]T, string) {
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
	if opts.PerPage <= 0 || int(opts.PerPage) >= len(items) {
		return items, ""
	}
	return items[:opts.PerPage], token(items[opts.PerPage])
}
