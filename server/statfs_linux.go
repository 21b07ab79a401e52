package server

import "syscall"

// diskSpace returns the total and usable bytes of the volume holding dir, as Java's
// FileStore.getTotalSpace / getUsableSpace (usable = available to unprivileged users);
// -1, -1 when it cannot tell.
func diskSpace(dir string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize)
}
