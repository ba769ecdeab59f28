// SPDX-License-Identifier: GPL-2.0-only
/* A handler plugin whose handler_init() registers nothing. */
int handler_init(void)
{
	return 0;
}
