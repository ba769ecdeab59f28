// SPDX-License-Identifier: GPL-2.0-only
/*
 * A handler plugin that imports a function no tcmu-runner provides (a
 * plugin of another version): dlopen() must fail, and the host say why.
 */
int tcmu_from_another_version(void);

int handler_init(void)
{
	return tcmu_from_another_version();
}
