/* cook.h — the cooked binary scene's frame, shared by its writer (cook_write.c) and reader (cook_read.c); see COOKED.md. */
#ifndef KEEL_COOK_H
#define KEEL_COOK_H

#define COOK_VERSION 1u
#define COOK_ENDIAN 0x01020304u
#define COOK_HEADER 24u
#define COOK_SECTION_ENTRY 16u
#define COOK_NONE 0xFFFFFFFFu
#define COOK_ENTITY_SIZE 25u /* uuid 16, name u32, parent u32, enabled u8 */
#define COOK_SCENE_SIZE 93u  /* uuid 16, name u32, grid: u8 + 3 f64 + 4 f64 + f64 + i64 */
/* ... then how the grid looks: 4 colours of 4 f64, fade f64, display u8 (files before these
 * keys end at COOK_SCENE_SIZE and read as the default look) */
#define COOK_SCENE_SIZE_LOOK (COOK_SCENE_SIZE + 137u)

enum { SEC_STRINGS = 1, SEC_SCENE, SEC_ENTITIES, SEC_COMPONENTS, SEC_COUNT_ = 4 };

#endif
