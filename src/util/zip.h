/* A zip archive written in one pass (luamcp pack's .mcpb): each entry
 * deflated with zlib (stored when that is not smaller), Unix modes kept in
 * the external attributes, no zip64 (an entry and the archive stay under
 * 4 GiB). */
#ifndef MCP_ZIP_H
#define MCP_ZIP_H

#include <stddef.h>
#include <time.h>

typedef struct mcp_zip mcp_zip;

/* A new archive at path, its entries dated mtime; NULL with errno set. */
mcp_zip *mcp_zip_open(const char *path, time_t mtime);
/* Add name (a relative path with '/') holding data; mode: its Unix
 * permissions (0644, 0755). 0, or -1 with errno set. */
int mcp_zip_add(mcp_zip *z, const char *name, const void *data, size_t len, unsigned mode);
/* Write the central directory and close; 0, or -1 with errno set. The
 * archive is freed either way. */
int mcp_zip_close(mcp_zip *z);

#endif
