package hoststats

import "syscall"

func statfs(path string) (Usage, error) {
	var s syscall.Statfs_t
	if err := syscall.Statfs(path, &s); err != nil {
		return Usage{}, err
	}
	bs := uint64(s.Bsize)
	return Usage{Size: s.Blocks * bs, Free: s.Bfree * bs, Available: s.Bavail * bs, Inodes: s.Files, InodesFree: s.Ffree}, nil
}
